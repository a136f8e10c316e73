"""The capture analysis of benchmarks/crosscheck/capture_codel.py on hand-made traces: pcap
matching (arrival, release, drop) and the offline Linux-CoDel replay's episodes and how
they end. Fast, no VM."""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "crosscheck"))
import capture_codel as cc  # noqa: E402

RATE = 10e6
DATA, ACK = 1514, 66


def _frame(ipid: int, seq: int, payload: int) -> bytes:
    ip_len = 20 + 20 + payload
    eth = b"\x02" * 6 + b"\x04" * 6 + b"\x08\x00"
    ip = struct.pack(">BBHHHBBH4s4s", 0x45, 0, ip_len, ipid, 0x4000, 64, 6, 0, bytes([10, 255, 0, 3]), bytes([10, 255, 0, 4]))
    tcp = struct.pack(">HHIIBBHHH", 40000, 5201, seq, 1, 5 << 4, 0x10, 1000, 0, 0)
    return eth + ip + tcp + b"\x00" * payload


def _pcap(path: Path, frames: list[tuple[int, bytes]], snap: int = 96) -> None:
    out = struct.pack("<IHHiIII", 0xA1B23C4D, 2, 4, 0, 0, snap, 1)
    for t, f in frames:
        d = f[:snap]
        out += struct.pack("<IIII", t // 1_000_000_000, t % 1_000_000_000, len(d), len(f)) + d
    path.write_bytes(out)


def test_pcap_matching_gives_arrival_release_and_drops(tmp_path: Path) -> None:
    a, b, c = _frame(1, 1000, 1460), _frame(2, 2460, 1460), _frame(3, 3920, 0)
    t0 = 1_700_000_000_000_000_000
    _pcap(tmp_path / "in.pcap", [(t0 + 1_000_000, a), (t0 + 1_000_010, b), (t0 + 1_200_000, c)])
    # b is dropped; a and c leave; a frame that never arrived (router-made) is unmatched
    _pcap(tmp_path / "out.pcap", [(t0 + 2_211_200, a), (t0 + 3_000_000, c), (t0 + 3_100_000, _frame(9, 0, 0))])
    ins, outs = cc.read_pcap(tmp_path / "in.pcap"), cc.read_pcap(tmp_path / "out.pcap")
    assert [p.size for p in ins] == [DATA, DATA, 54]  # wire length, not the 96-byte snap
    assert [p.kind for p in ins] == ["data", "data", "ack"]
    tr = cc.match_capture(ins, outs, t0)
    assert tr.unmatched_out == 1
    assert [p.dropped for p in tr.packets] == [False, True, False]
    assert tr.packets[0].arr == pytest.approx(1e-3)
    assert tr.packets[0].release == pytest.approx(2.2112e-3)
    assert tr.packets[2].release - tr.packets[2].arr == pytest.approx(1.8e-3)


def _ser(size: int) -> float:
    return size * 8 / RATE


def _replay(pk: list[cc.QPkt]) -> cc.Replay:
    # the tbf peek: the shaper looks again when the packet it took has been sent
    return cc.replay(cc.Trace(pk), release=lambda i, tc: tc + _ser(pk[i].size))


def test_ack_tail_ends_the_episode_by_backlog() -> None:
    # 120 full frames at once, then 10 ACKs behind them: the sojourn passes 5 ms at the
    # 5th packet, CoDel drops after 100 ms above (packet 88), and the episode ends when
    # the last data packet leaves only the ACKs (660 B <= 1514 B) behind it, though they
    # have waited ~140 ms
    pk = [cc.QPkt(0.0, DATA, "data", None) for _ in range(120)] + [cc.QPkt(1e-3, ACK, "ack", None) for _ in range(10)]
    rp = _replay(pk)
    assert rp.drops == [88]
    (ep,) = rp.episodes
    assert ep.reason == "backlog_le_mtu" and ep.drops == 1 and ep.count0 == 1
    assert ep.end_kind == "data" and ep.end_backlog == 10 * ACK
    assert (ep.end_acks, ep.end_qlen) == (10, 10)
    assert ep.end == pytest.approx(118 * _ser(DATA))  # packet 119's dequeue, one packet dropped before it
    c = cc.classify(rp)
    assert c["ends"] == {"below_target": 0, "backlog_le_mtu": 1, "empty": 0, "first_above_reset": 0}


def test_standing_queue_escalates_with_linux_control_law() -> None:
    # 400 full frames at once: drops 100 ms apart, then 50 ms (Linux's one Newton step from
    # 1.0 for count 2 gives 0.5, not 1/sqrt 2), count rising; the drops are each the head
    pk = [cc.QPkt(0.0, DATA, "data", None) for _ in range(400)]
    rp = _replay(pk)
    (ep,) = rp.episodes
    assert ep.drops == len(rp.drops) >= 4 and rp.counts_at_drop[:4] == [1, 2, 3, 4]
    t = [(i - n) * _ser(DATA) for n, i in enumerate(rp.drops)]  # call instants: packets ahead, less the drops
    assert t[1] - t[0] == pytest.approx(0.100, abs=_ser(DATA))
    assert t[2] - t[1] == pytest.approx(0.050, abs=_ser(DATA))
    assert ep.reason == "backlog_le_mtu"  # the queue drains to one frame at the end


def test_ignored_verdict_after_entry_drop_resets_first_above() -> None:
    # the entry drop's next packet leaves one frame behind: codel_dequeue ignores that
    # verdict and stays in dropping state, but first_above_time is cleared, so the next
    # dequeue (new packets have arrived: backlog > MTU, sojourn >> target) ends the episode
    pk = [cc.QPkt(0.0, DATA, "data", None) for _ in range(91)]
    entry = 88 * _ser(DATA)
    pk += [cc.QPkt(entry + 1e-4, DATA, "data", None) for _ in range(5)]
    rp = _replay(pk)
    assert rp.drops == [88]
    (ep,) = rp.episodes
    assert ep.entry_next == "backlog_le_mtu"
    assert ep.reason == "first_above_reset" and ep.end == pytest.approx(entry + _ser(DATA))


def test_replay_checks_drops_against_observed() -> None:
    pk = [cc.QPkt(0.0, DATA, "data", None) for _ in range(120)]
    rp = _replay(pk)
    # "observed": what the replay dropped left nothing; everything else was released
    for i, p in enumerate(pk):
        if i not in rp.drops:
            p.release = 1.0
    chk = cc.check_drops(cc.Trace(pk), rp, 0.0, 1.0)
    assert chk == {"observed": 1, "replay": 1, "both": 1, "only_observed": 0, "only_replay": 0}


def test_sim_trace_sizes_from_dequeue_gaps() -> None:
    pd = pytest.importorskip("pandas")
    # three packets reach an idle tbf (full bucket: one frame) at t = 0: a frame, an ACK,
    # a frame. The frame leaves at once and the shaper looks again when the 1 Gbit/s wire
    # has carried it; the ACK then waits for the bucket to refill to 66 B and for its own
    # wire time. The last one has nobody behind it: a guess (it waited: a full frame).
    r8, w8 = 8 / 10e6, 8 / 1e9
    d0 = 0.0
    d1 = d0 + DATA * w8
    b1 = (d1 - d0) / r8  # bytes in the bucket when the ACK is handed out
    d2 = d1 + (ACK - b1) * r8 + ACK * w8
    rows = [("queue", "bottleneck_up", "sojourn", t, t) for t in (d0, d1, d2)]
    s = pd.DataFrame(rows, columns=["kind", "entity", "metric", "t", "value"])
    tr = cc.sim_trace(s, "bottleneck_up", 10e6, 1e9)
    assert [p.size for p in tr.packets] == [DATA, ACK, DATA]
    assert [p.kind for p in tr.packets] == ["data", "ack", "data"]
    assert tr.info["size_guessed_other"] == 1 and tr.info["size_guessed_lone"] == 0
    assert [p.call for p in tr.packets] == [d0, d1, d2]
