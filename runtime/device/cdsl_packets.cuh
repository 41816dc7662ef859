/*
 * cdsl_packets.cuh - device helpers for packets (docs/language.md, section 8): send_packets
 * and recv_packets, the flag travelling inside the data. A program with packets includes it
 * after cdsl_device.cuh (compiler/emit/emit_packets.c; it uses the argument block,
 * cdsl_ld_relaxed_sys, bounded spins and the error record, cdsl_rank_buf, cdsl_at and the
 * launch's bases), for the p2p and nvls flavours alike (packets go through a peer's unicast
 * mapping; they never need the switch).
 *
 * Packets are MSCCL++'s LL8: every 4-byte word of data travels in one 8-byte word beside a
 * 32-bit flag, written with one st.relaxed.sys.u64. A naturally aligned 64-bit scalar access
 * is single-copy atomic in the PTX memory model, so a reader whose ld.relaxed.sys.u64 sees the
 * flag sees the data written with it, and nothing else is ordered (no fence, no release: the
 * checker gives packets no visibility for other memory). NCCL's LL stores 16 bytes,
 * {data, flag, data, flag}, with one v4 store, which the PTX model treats as four accesses in
 * no particular order (it relies on the hardware writing 16 aligned bytes at once); LL8 needs
 * no such assumption, at the price of 8 bytes moved per 4 of data instead of 16 per 8.
 *
 * Layout (compiler/lower/packet_layout.c, the sim uses the same): the receiver's packet slots are
 * its internal buffer `pb`; a packet op's data words start at word `slot * chunk_bytes / 4` of
 * its pair's place, and data word w of launch parity e & 1 is slot word 2w + (e & 1). The flag
 * is CDSL_PKT_FLAG(e) (runtime/abi.h: e + 1, skipping 0 when it wraps), e being this
 * rank's count of launches of programs with packets: base word
 * CDSL_STATE_PKT_EPOCH of the launch (runtime/abi.h), which the leave function hands on plus
 * one (the rank's consumed() says 1 for it), with plain stores like every base, the same on
 * every rank since every rank launches the same programs in the same order. A block reads it
 * after a __syncthreads, since only thread 0 read the launch number (cdsl_enter).
 *
 * Every thread handles the words i, i + step, ... of the range (step: the rank's threads),
 * as the data operations do; a receive polls each of its words, bounded by a.spin_limit, and
 * reports a give-up as the receive from rank p (CDSL_PKT_COUNTER(p)).
 */

#ifndef CDSL_PACKETS_CUH
#define CDSL_PACKETS_CUH

__device__ __forceinline__ void cdsl_st_relaxed_sys(u64 *p, u64 v)
{
    asm volatile("st.relaxed.sys.global.u64 [%0], %1;" : : "l"(p), "l"(v) : "memory");
}

/* The launch's packet epoch, for every thread of the block (all of them call it). */
__device__ __forceinline__ u64 cdsl_pkt_epoch(const CdslArgs &a)
{
    __syncthreads();
    return cdsl_base(a, CDSL_STATE_PKT_EPOCH(CDSL_NRANKS));
}

/* A request to port proxy k of a plan with packets (cdsl_port_request, cdsl_device.cuh): the
   launch's packet flag first, in the proxy's host words, so that the proxy knows which half of
   a double scratch buffer this launch's packets are in. */
__device__ __forceinline__ void cdsl_port_request_flag(const CdslArgs &a, u32 made, u32 host, u32 flag_host)
{
    const u32 flag = CDSL_PKT_FLAG(cdsl_pkt_epoch(a));     /* the block meets in there */
    if (threadIdx.x == 0) {
        u64 v = a.port[made] + 1;
        a.port[made] = v;
        cdsl_st_relaxed_sys(a.port_host + flag_host, flag);
        cdsl_fence_sys();
        cdsl_st_relaxed_sys(a.port_host + host, v);
    }
}

/* p.send_packets(src): chunks [sc, sc + n) of local buffer sb into rank p's slots, at `slot`.
   The packets say that everything before the send is done: after data operations (CDSL_RELEASE)
   each sending thread fences at system scope first, as a signal's arriving threads do. */
__device__ CDSL_OUTLINE void cdsl_send_packets(const CdslArgs &a, int p, int pb, int slot, int sb, int sc, int n,
                                               CdslOrder order)
{
    const u32 *src = (const u32 *)(a.buf[sb] + cdsl_at(a, sc));
    u64 *slots = (u64 *)cdsl_rank_buf(a, p, pb);
    const u64 e = cdsl_pkt_epoch(a), flag = (u64)CDSL_PKT_FLAG(e) << 32;
    const u64 base = (u64)slot * (a.chunk_bytes / 4), words = cdsl_at(a, n) / 4;
    const u64 step = (u64)gridDim.x * blockDim.x;
    if (order == CDSL_RELEASE && (u64)blockIdx.x * blockDim.x + threadIdx.x < words)
        cdsl_fence_sys();
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < words; i += step)
        cdsl_st_relaxed_sys(&slots[2 * (base + i) + (e & 1)], flag | src[i]);
}

/* p.recv_packets(dst): poll the packets rank p sent this rank at `slot`, then their data into
   chunks [dc, dc + n) of local buffer db. False (for the whole block) when a poll gave up. */
__device__ CDSL_OUTLINE bool cdsl_recv_packets(const CdslArgs &a, int p, int pb, int slot, int db, int dc, int n,
                                                u32 line)
{
    u32 *dst = (u32 *)(a.buf[db] + cdsl_at(a, dc));
    const u64 *slots = (const u64 *)a.buf[pb];
    const u64 e = cdsl_pkt_epoch(a);
    const u32 flag = CDSL_PKT_FLAG(e);
    const u64 base = (u64)slot * (a.chunk_bytes / 4), words = cdsl_at(a, n) / 4;
    const u64 step = (u64)gridDim.x * blockDim.x;
    int bad = 0;
    for (u64 i = (u64)blockIdx.x * blockDim.x + threadIdx.x; i < words && !bad; i += step) {
        const u64 *word = &slots[2 * (base + i) + (e & 1)];
        for (u64 polls = 1;; polls++) {
            u64 v = cdsl_ld_relaxed_sys(word);
            if ((u32)(v >> 32) == flag) {
                dst[i] = (u32)v;
                break;
            }
            cdsl_spin_pause(polls);
            if (a.spin_limit && polls >= a.spin_limit) {
                cdsl_give_up(a, line, CDSL_PKT_COUNTER(p));
                bad = 1;
                break;
            }
            if ((polls & 255) == 0 && cdsl_failed(a)) {
                bad = 1;
                break;
            }
        }
    }
    return !__syncthreads_or(bad);
}

/* ---- A plan's packets (MSCCL++ LL, docs/mscclpp.md "Packets") -------------------------------
   As MSCCL++'s executor runs ppkt, cpkt, upkt, rppkt, gstorepkt and the reductions
   (src/core/include/execution_kernel.hpp): a plan's packets live in its packet buffer `pb` (the
   scratch, compiler/plan/mscclpp_map.c), data chunk c's at byte 2 * cdsl_at(a, c), i.e. at
   twice the data's offset, one {4 bytes of data, 4 bytes of flag} word per data word. With the
   double scratch buffer (`half` > 0: the chunks of one half) a launch whose flag is even uses
   the upper half (executor.cc:498). The flag is the launch's, CDSL_PKT_FLAG of the packet
   epoch, which every launch of a program with packets advances (the executor's per-launch
   counter, executor.cc:516 and :534, starting at 1 as it does).
   CDSL_MSC_PACKET_BYTES picks the executor's packet type: 16 (LL16Packet, its default,
   executor.hpp:88) stores {data, flag, data, flag} with one 16-byte store and a read checks
   both flags; 8 (LL8Packet) one {data, flag} word. Here the 16-byte store is a v2.u64, whose
   two 8-byte halves each carry their flag and are single-copy atomic in the PTX model. Each
   thread of the block does packets tid, tid + blockDim.x, ... as the executor's loops do, so a
   thread reads back the packets it polled itself. */

#ifndef CDSL_MSC_PACKET_BYTES
#define CDSL_MSC_PACKET_BYTES 16
#endif
#if CDSL_MSC_PACKET_BYTES != 16 && CDSL_MSC_PACKET_BYTES != 8
#error "CDSL_MSC_PACKET_BYTES is 16 (LL16) or 8 (LL8)"
#endif

enum { CDSL_MSC_WORDS = CDSL_MSC_PACKET_BYTES / 8 }; /* {data, flag} words per packet */

/* Where data chunk c's packets start in rank q's packet buffer pb, this launch. */
__device__ __forceinline__ u64 *cdsl_msc_packets(const CdslArgs &a, char *base, int half, int c, u32 flag)
{
    u64 off = (half && (flag & 1u) == 0 ? cdsl_at(a, half) : 0) + 2 * cdsl_at(a, c);
    return (u64 *)(base + off);
}

__device__ __forceinline__ void cdsl_msc_store(u64 *p, const u64 *w)
{
#if CDSL_MSC_PACKET_BYTES == 16
    asm volatile("st.relaxed.sys.global.v2.u64 [%0], {%1, %2};" : : "l"(p), "l"(w[0]), "l"(w[1]) : "memory");
#else
    cdsl_st_relaxed_sys(p, w[0]);
#endif
}

/* One poll of packet p: its data words into d when every flag is this launch's. */
__device__ __forceinline__ bool cdsl_msc_load(const u64 *p, u32 flag, u32 *d)
{
    u64 w[CDSL_MSC_WORDS];
#if CDSL_MSC_PACKET_BYTES == 16
    asm volatile("ld.relaxed.sys.global.v2.u64 {%0, %1}, [%2];" : "=l"(w[0]), "=l"(w[1]) : "l"(p) : "memory");
#else
    w[0] = cdsl_ld_relaxed_sys(p);
#endif
    for (int k = 0; k < CDSL_MSC_WORDS; k++) {
        if ((u32)(w[k] >> 32) != flag)
            return false;
        d[k] = (u32)w[k];
    }
    return true;
}

/* Polls packet p until it is this launch's, bounded like every wait. False: gave up. */
__device__ __forceinline__ bool cdsl_msc_poll(const CdslArgs &a, const u64 *p, u32 flag, u32 *d, int from, u32 line)
{
    for (u64 polls = 1;; polls++) {
        if (cdsl_msc_load(p, flag, d))
            return true;
        cdsl_spin_pause(polls);
        if (a.spin_limit && polls >= a.spin_limit) {
            cdsl_give_up(a, line, CDSL_PKT_COUNTER(from));
            return false;
        }
        if ((polls & 255) == 0 && cdsl_failed(a))
            return false;
    }
}

/* ppkt, cpkt, and the sends of rppkt, gstorepkt and the reductions: chunks [sc, sc + n) of
   local buffer sb (or, when sb is pb, the data of packets this block polled there) as packets
   into rank p's packet buffer at data chunk dc. */
__device__ CDSL_OUTLINE void cdsl_tb_msc_put_packets(const CdslArgs &a, int p, int pb, int half, int dc, int sb, int sc,
                                                     int n)
{
    const u32 flag = CDSL_PKT_FLAG(cdsl_pkt_epoch(a));
    u64 *dst = cdsl_msc_packets(a, cdsl_rank_buf(a, p, pb), half, dc, flag);
    const u64 *from = sb == pb ? cdsl_msc_packets(a, a.buf[pb], half, sc, flag) : nullptr;
    const u32 *src = (const u32 *)(a.buf[sb] + cdsl_at(a, sc));
    const u64 npkts = cdsl_at(a, n) * 2 / CDSL_MSC_PACKET_BYTES;
    for (u64 i = threadIdx.x; i < npkts; i += blockDim.x) {
        u64 w[CDSL_MSC_WORDS];
        for (int k = 0; k < CDSL_MSC_WORDS; k++) {
            u64 j = i * CDSL_MSC_WORDS + k;
            w[k] = (u64)flag << 32 | (from ? (u32)from[j] : src[j]);
        }
        cdsl_msc_store(&dst[i * CDSL_MSC_WORDS], w);
    }
}

/* upkt, and the poll in place of rppkt and gstorepkt (db == pb): the packets at data chunk sc of
   this rank's packet buffer, once this launch's, into chunks [dc, dc + n) of db. `from` is the
   rank whose packets they are (for a give-up's report). False for the whole block on a give-up. */
__device__ CDSL_OUTLINE bool cdsl_tb_msc_read_packets(const CdslArgs &a, int from, int pb, int half, int sc, int db,
                                                      int dc, int n, u32 line)
{
    const u32 flag = CDSL_PKT_FLAG(cdsl_pkt_epoch(a));
    const u64 *pkts = cdsl_msc_packets(a, a.buf[pb], half, sc, flag);
    u32 *dst = db == pb ? nullptr : (u32 *)(a.buf[db] + cdsl_at(a, dc));
    const u64 npkts = cdsl_at(a, n) * 2 / CDSL_MSC_PACKET_BYTES;
    int bad = 0;
    for (u64 i = threadIdx.x; i < npkts && !bad; i += blockDim.x) {
        u32 d[CDSL_MSC_WORDS];
        bad = !cdsl_msc_poll(a, &pkts[i * CDSL_MSC_WORDS], flag, d, from, line);
        for (int k = 0; dst && !bad && k < CDSL_MSC_WORDS; k++)
            dst[i * CDSL_MSC_WORDS + k] = d[k];
    }
    return !__syncthreads_or(bad);
}

/* The reductions' reads (repkt, respkt, recpkt, recspkt): chunks [dc, dc + n) of db = chunks
   of xb from xc + the packets at data chunk sc, once this launch's. */
__device__ CDSL_OUTLINE bool cdsl_tb_msc_reduce_packets(const CdslArgs &a, int from, int pb, int half, int sc, int xb,
                                                        int xc, int db, int dc, int n, u32 line)
{
    const u32 flag = CDSL_PKT_FLAG(cdsl_pkt_epoch(a));
    const u64 *pkts = cdsl_msc_packets(a, a.buf[pb], half, sc, flag);
    const u32 *x = (const u32 *)(a.buf[xb] + cdsl_at(a, xc));
    u32 *dst = (u32 *)(a.buf[db] + cdsl_at(a, dc));
    const u64 npkts = cdsl_at(a, n) * 2 / CDSL_MSC_PACKET_BYTES;
    int bad = 0;
    for (u64 i = threadIdx.x; i < npkts && !bad; i += blockDim.x) {
        u32 d[CDSL_MSC_WORDS];
        bad = !cdsl_msc_poll(a, &pkts[i * CDSL_MSC_WORDS], flag, d, from, line);
        for (int k = 0; !bad && k < CDSL_MSC_WORDS; k++) {
            CdslAcc s;
            cdsl_acc_first(s, x[i * CDSL_MSC_WORDS + k]);
            cdsl_acc_add(s, d[k]);
            dst[i * CDSL_MSC_WORDS + k] = cdsl_acc_word(s);
        }
    }
    return !__syncthreads_or(bad);
}

#endif /* CDSL_PACKETS_CUH */
