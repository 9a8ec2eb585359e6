"""Checks of a `tunbed tunnels` point's record shared by the runner_tunnels tests (gregw, vxlan,
wireguard-go): the sessions spread over the tunnels as the bed plans them, and each carrying
tunnel's counters on both gateways against each other and against what the server received.
Imported by the tests' Python parts (the path of this directory given to them)."""


def check_point(rec, n, sessions, packets=True):
    """Record rec of n tunnels and `sessions` sessions: the traffic complete; session i from the
    client's site of tunnel i mod n to the server's; the first min(n, sessions) tunnels carried
    them all; per tunnel, nothing out that was not put in, the server's bytes within what gwb
    took out; with packets (gateways that count them), what was put in and not taken out no
    more than the gateways and their devices counted as dropped (exact when none was); idle
    tunnels with nothing on them."""
    tcp = rec["traffic"]["tcp"]
    assert rec["traffic"]["complete"] and tcp["failed"] == 0, (n, tcp.get("errors"))
    for s in tcp["per_session"]:
        i = s["id"] % n
        want = (f"198.18.{64 + i // 256}.{i % 256}", f"198.18.{128 + i // 256}.{i % 256}")
        assert (s["local"], s["remote"]) == want, (n, s)
    carried = rec["tunnels"]["carried"]
    assert sorted(t["name"] for t in carried) == [f"t{i:05d}" for i in range(min(n, sessions))], \
        (n, carried)
    assert sum(t["sessions"] for t in carried) == sessions, n
    lost = {"gwa": 0, "gwb": 0}
    for t in carried:
        a, b = t["gwa"], t["gwb"]
        assert a["tx_bytes"] > 0 and b["rx_bytes"] > 0, (n, t)
        assert b["rx_bytes"] <= a["tx_bytes"] and a["rx_bytes"] <= b["tx_bytes"], (n, t)
        assert b["rx_bytes"] >= t["server_received"] > 0, (n, t)
        if packets:
            assert b["rx_packets"] <= a["tx_packets"] and a["rx_packets"] <= b["tx_packets"], (n, t)
            lost["gwb"] += a["tx_packets"] - b["rx_packets"]
            lost["gwa"] += b["tx_packets"] - a["rx_packets"]
    if packets:
        dropped = sum(t[r]["drops"] for t in carried for r in ("gwa", "gwb"))
        for role in lost:
            assert lost[role] <= rec["tunnels"]["unattributed"][role] + dropped, \
                (n, role, lost, rec["tunnels"]["unattributed"])
    idle = {"tunnels": max(n - sessions, 0), "packets": 0, "bytes": 0}
    assert rec["tunnels"]["idle"] == idle, rec["tunnels"]["idle"]
