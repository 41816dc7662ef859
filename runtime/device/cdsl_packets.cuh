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

#endif /* CDSL_PACKETS_CUH */
