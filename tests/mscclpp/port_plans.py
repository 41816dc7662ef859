# tests/mscclpp/port_plans.py - makes the hand-made port-channel plans tests/mscclpp/port_*.json (run:
# python3 tests/mscclpp/port_plans.py tests/mscclpp). Two ranks, one port channel each way, an entry
# handshake (signal, wait), then one pattern each: pwsf then reuse of its source (safe), pws then
# reuse (a race: the proxy may still read it), a signal issued before the put it should cover (an
# exit race), put + flush with the destination named + reuse (safe), the same with a flush
# without dst_buff, which the executor runs as a flush of no channel (a race), and packets
# through a port channel (rppkt), read by address as every packet is.
import json, sys
def plan(name, ops_for, scratch=1, coll="allgather"):
    gpus = []
    for r in range(2):
        p = 1 - r
        gpus.append({"id": r, "input_chunks": 1, "output_chunks": 2, "scratch_chunks": scratch,
            "channels": [{"channel_type": "port", "connected_to": [p]}],
            "remote_buffers": [{"rank": p, "type": "o", "access_channel_types": ["port"]}],
            "threadblocks": [{"id": 0, "ops": ops_for(r),
                "channels": [{"channel_type": "port", "channel_ids": [0]}],
                "remote_buffer_refs": [{"access_channel_type": "port", "remote_buffer_ids": [0]}]}],
            "semaphores": []})
    for g in gpus:
        g["threadblocks"][0]["ops"] = [port("signal"), NOP, port("wait"), NOP] + g["threadblocks"][0]["ops"]
    return {"name": name, "collective": coll, "protocol": "Simple", "inplace": False, "reuse_resources": False,
            "num_threads_per_block": 1024, "use_double_scratch_buffer": False, "buffer_alignment": 16,
            "min_message_size": 0, "max_message_size": 18446744073709551615, "gpus": gpus}
def cp(src, si, dst, di): return {"name": "copy", "src_buff": [{"type": src, "index": si, "size": 1}], "dst_buff": [{"type": dst, "index": di, "size": 1}], "channel_type": "none"}
def port(name, src=None, si=0, di=None, dsts=True):
    o = {"name": name, "channel_ids": [0], "channel_type": "port"}
    if src is not None:
        o["src_buff"] = [{"type": src, "index": si, "size": 1}]
        o["dst_buff"] = [{"buffer_id": 0, "index": di, "size": 1}]
    return o
NOP = {"name": "nop"}
def ok(r):      # stage in scratch, put with signal and flush, then reuse the scratch: safe
    return [cp("i", 0, "o", r), cp("i", 0, "s", 0), NOP, port("pwsf", "s", 0, r), NOP, cp("o", r, "s", 0), NOP, port("wait"), NOP]
def reuse(r):   # the same with pws: the proxy may still be reading the scratch when the block overwrites it
    return [cp("i", 0, "o", r), cp("i", 0, "s", 0), NOP, port("pws", "s", 0, r), NOP, cp("o", r, "s", 0), NOP, port("wait"), NOP]
def early(r):   # the signal goes out before the put: the peer's wait does not cover the data
    return [cp("i", 0, "o", r), NOP, port("signal"), NOP, port("put", "i", 0, r), NOP, port("wait"), NOP]
def flush(r):   # put, then flush with the destination named, then signal: safe
    f = port("flush"); f["dst_buff"] = [{"buffer_id": 0, "index": r, "size": 1}]
    return [cp("i", 0, "o", r), cp("i", 0, "s", 0), NOP, port("put", "s", 0, r), NOP, f, NOP, cp("o", r, "s", 0), NOP, port("signal"), NOP, port("wait"), NOP]
def bare_flush(r):  # a flush without dst_buff flushes nothing (the executor's nOutputs is 0)
    return [cp("i", 0, "o", r), cp("i", 0, "s", 0), NOP, port("put", "s", 0, r), NOP, port("flush"), NOP, cp("o", r, "s", 0), NOP, port("signal"), NOP, port("wait"), NOP]
for n, f in [("port_pwsf_reuse_ok", ok), ("port_pws_reuse_race", reuse), ("port_signal_before_put", early),
             ("port_flush_ok", flush), ("port_flush_without_dst", bare_flush)]:
    json.dump(plan(n, f), open(sys.argv[1] + "/" + n + ".json", "w"), indent=2)

# Packets through a port channel, as MSCCL++'s multi-node packet allgather does it: each rank
# packs its input into its own scratch (cpkt), polls them and has the proxy copy them to the
# peer's scratch (rppkt on port), and unpacks the peer's (upkt). LL, double scratch buffer.
def packet_plan(name):
    gpus = []
    for r in range(2):
        p = 1 - r
        ops = [cp("i", 0, "o", r),
               {"name": "cpkt", "src_buff": [{"type": "i", "index": 0, "size": 1}], "dst_buff": [{"type": "s", "index": 0, "size": 1}]},
               NOP,
               {"name": "rppkt", "channel_type": "port", "channel_ids": [0], "src_buff": [{"type": "s", "index": 0, "size": 1}],
                "dst_buff": [{"buffer_id": 0, "index": 1, "size": 1}]},
               {"name": "upkt", "src_buff": [{"type": "s", "index": 1, "size": 1}], "dst_buff": [{"type": "o", "index": p, "size": 1}]}]
        gpus.append({"id": r, "input_chunks": 1, "output_chunks": 2, "scratch_chunks": 2,
            "channels": [{"channel_type": "port", "connected_to": [p]}],
            "remote_buffers": [{"rank": p, "type": "s", "access_channel_types": ["port"]}],
            "threadblocks": [{"id": 0, "ops": ops, "channels": [{"channel_type": "port", "channel_ids": [0]}],
                "remote_buffer_refs": [{"access_channel_type": "port", "remote_buffer_ids": [0]}]}],
            "semaphores": []})
    return {"name": name, "collective": "allgather", "protocol": "LL", "inplace": False, "reuse_resources": False,
            "num_threads_per_block": 1024, "use_double_scratch_buffer": True, "buffer_alignment": 16,
            "min_message_size": 0, "max_message_size": 18446744073709551615, "gpus": gpus}
json.dump(packet_plan("port_packets"), open(sys.argv[1] + "/port_packets.json", "w"), indent=2)
