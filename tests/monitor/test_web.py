"""The web view without a browser: :class:`monitor.webstate.MonitorView` (the state, its
versions, events and listeners), its drawing (:mod:`monitor.weblayout`), the Starlette
app's routes (starlette's TestClient) and :class:`monitor.web.WebServer` on a real
socket (its event stream followed live with http.client)."""
from __future__ import annotations

import http.client
import json
import re
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from starlette.testclient import TestClient

from monitor import weblayout
from monitor.evidence import Evidence, LinkDir, LinkEstimate, Verdict, component
from monitor.web import STATIC_DIR, WebServer, WebServerError, create_app
from monitor.webstate import MonitorView
from topo.model import build_fabric
from monitor.probes import tier_fabric_links
from topo.spec import FabricSpec, load_spec

SPECS = Path(__file__).resolve().parents[2] / "topo" / "specs"


class Clock:
    """A settable monotonic clock."""

    def __init__(self, t_s: float = 100.0) -> None:
        self.t_s = t_s

    def __call__(self) -> float:
        return self.t_s


@pytest.fixture()
def view() -> MonitorView:
    return MonitorView(build_fabric(FabricSpec()), clock=Clock(), wall=lambda: 1_700_000_000.0)


# ------------------------------------------------------------------------------ drawing
def test_every_cable_is_drawn_as_two_directions_on_either_side() -> None:
    fab = build_fabric(FabricSpec())
    d = weblayout.layout(fab)
    cables = list(fab.links())
    assert len(d.links) == 2 * len(cables) == 32
    by_id = {link["id"]: link for link in d.links}
    up, down = by_id["b0r0l0->s0"], by_id["s0->b0r0l0"]
    assert (up["src"], up["dst"], down["src"], down["dst"]) == ("b0r0l0", "s0", "s0", "b0r0l0")
    # the two lines are apart (not drawn on top of each other) and parallel
    gap = abs(up["x1"] - down["x2"]) + abs(up["y1"] - down["y2"])
    assert 3 < gap < 20
    assert "b1s1-eth1->b1r1l0" in by_id and "b1r1l0->b1s1-eth1" in by_id
    nodes = {n["name"]: n for n in d.nodes}
    assert {s.name for s in fab.switches} | {h.name for h in fab.hosts} <= set(nodes)
    assert nodes["s0"]["y"] < nodes["b0r0l0"]["y"] < nodes["b0s0"]["y"], "spines, leaves, servers"
    for n in d.nodes:
        assert 0 < n["x"] < d.width and 0 < n["y"] < d.height, n


def test_parallel_cables_have_a_port_in_their_names() -> None:
    d = weblayout.layout(build_fabric(FabricSpec(uplinks_per_spine=2)))
    assert d.resolve("b0r0l0->s0") == ["b0r0l0:3->s0", "b0r0l0:4->s0"]
    assert d.resolve("b0r0l0:4->s0") == ["b0r0l0:4->s0"]
    lines = [(l["x1"], l["y1"]) for l in d.links if l["id"] in ("b0r0l0:3->s0", "b0r0l0:4->s0")]
    assert lines[0] != lines[1], "parallel cables are drawn apart"


def test_a_dual_port_nics_second_cable_is_named_by_its_own_port() -> None:
    """Each NIC port's cable is drawn to that port (``b0s0-eth0p1`` on its second leaf):
    an evaluation naming it does not fail (issue 29: the faults scenario on the two-pod
    spec lost evaluations to "no link direction 'p1.b0r0l1->p1.b0s0-eth0p1'")."""
    d = weblayout.layout(build_fabric(FabricSpec(pods=2, blocks=1, cores=2, ports_per_nic=2,
                                                 leaves_per_rail=2)))
    assert d.resolve("p1.b0r0l1->p1.b0s0-eth0p1") == ["p1.b0r0l1->p1.b0s0-eth0p1"]
    assert d.resolve("b0s0-eth0p1->b0r0l1") == ["b0s0-eth0p1->b0r0l1"]
    assert "b0r0l1->b0s0-eth0" not in d.link_ids


def test_names_that_are_not_links_are_refused_by_name() -> None:
    d = weblayout.layout(build_fabric(FabricSpec()))
    with pytest.raises(ValueError, match="no link direction 'b0r0l0->b1r0l0'"):
        d.resolve("b0r0l0->b1r0l0")
    with pytest.raises(ValueError, match="not a link direction"):
        d.resolve("b0r0l0 to s0")


@pytest.mark.parametrize("spec", ["dualport.yaml", "pod2-dualport.yaml"])
def test_every_watched_direction_of_a_dual_port_fabric_is_drawn(spec: str) -> None:
    """A dual-port NIC's second port (``<host>-eth<r>p1``) is a link direction of its own:
    the localiser's evidence names it, and the view once refused it ("no link direction
    'p1.b0r0l1->p1.b0s0-eth0p1'"), which failed every evaluation of the monitor on these
    fabrics (BMv2 run of issue 29, scenarios/README.md, "On BMv2")."""
    fab = build_fabric(load_spec(SPECS / spec))
    d = weblayout.layout(fab)
    drawn = {str(link): d.resolve(str(link)) for link in tier_fabric_links(fab)}   # none refused
    assert all(drawn[f"{p.intf}->{p.leaf}"] and drawn[f"{p.leaf}->{p.intf}"]
               for h in fab.hosts for n in h.nics for p in n.ports)
    nic = next(h for h in fab.hosts).nics[0]
    assert d.resolve(f"{nic.ports[1].leaf}->{nic.ports[1].intf}") == [f"{nic.ports[1].leaf}->{nic.ports[1].intf}"]
    assert d.targets(f"nic {nic.ports[1].intf}") == {"links": [], "nodes": [nic.intf]}


def test_the_core_tier_is_drawn_above_the_spines() -> None:
    """On the two-pod spec the cores have a row of their own and every spine ↔ core
    direction is a drawn line (they resolved to nothing before: "known, not drawn")."""
    fab = build_fabric(load_spec(SPECS / "pod2-dualport.yaml"))
    d = weblayout.layout(fab)
    nodes = {n["name"]: n for n in d.nodes}
    assert {c.name for c in fab.cores} <= set(nodes) and nodes["c1.1"]["role"] == "core"
    assert nodes["c0.0"]["y"] < nodes["s0"]["y"] < nodes["b0r0l0"]["y"] < nodes["b0s0"]["y"]
    assert len({nodes[c.name]["x"] for c in fab.cores}) == len(fab.cores)
    up = [l for l in tier_fabric_links(fab) if {l.src, l.dst} & {c.name for c in fab.cores}]
    assert len(up) == 32 and all(d.resolve(str(l)) == [str(l)] for l in up)
    assert len(d.links) == 2 * len(list(fab.links()))
    assert d.targets("switch c1.1") == {"links": [], "nodes": ["c1.1"]}
    assert d.targets("route c1.1 10.0.1.0/24")["nodes"] == ["c1.1"]
    for n in d.nodes:
        assert 0 < n["x"] < d.width and 0 < n["y"] < d.height, n


def test_servers_are_left_out_of_big_fabrics(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(weblayout, "MAX_DRAWN_HOSTS", 3)
    d = weblayout.layout(build_fabric(FabricSpec()))
    assert not d.hosts_drawn and {n["role"] for n in d.nodes} == {"spine", "leaf"}
    assert len(d.links) == 16 and d.resolve("b0s0-eth0->b0r0l0") == []


@pytest.mark.parametrize("comp, links, nodes", [
    ("link b0r0l0->s1", ["b0r0l0->s1"], []),
    ("cable b0r0l0<->s1", ["b0r0l0->s1", "s1->b0r0l0"], []),
    ("switch s1", [], ["s1"]),
    ("route s0 10.1.0.0/24", [], ["s0"]),
    ("nic b1s0-eth0", [], ["b1s0-eth0"]),
    ("port b0r0l0:4", ["b0r0l0->s1"], ["b0r0l0"]),
    ("agent b0s1", [], ["b0s1"]),
    ("controller", [], []),
    ("link b0r0l0->nowhere", [], []),
])
def test_components_point_at_what_is_drawn(view: MonitorView, comp: str, links: list[str], nodes: list[str]) -> None:
    assert view.targets(comp) == {"links": links, "nodes": nodes}


# ------------------------------------------------------------------------------ the view
def test_link_updates_are_one_version_and_all_or_nothing(view: MonitorView) -> None:
    assert view.version == 0
    view.update_links(util={"b0r0l0->s0": 0.5, LinkDir("s0", "b0r0l0"): 1.3}, state={"b0r0l0:3->s0": "ok"},
                      alarm={"b0r0l0->s0": 3}, loss={"b0r0l0->s0": 0.0})
    assert view.version == 1
    links = view.snapshot()["links"]
    assert links["b0r0l0->s0"] == {"util": 0.5, "state": "ok", "alarm": 3, "loss": 0.0}
    assert links["s0->b0r0l0"]["util"] == 1.3 and links["s0->b0r0l0"]["state"] == "unknown"
    for bad, message in [({"state": {"b0r0l0->s0": "flaky"}}, "state 'flaky' is not one of ok, lossy"),
                         ({"alarm": {"b0r0l0->s0": 4}}, "alarm level 4 is not one of 0, 1, 2, 3"),
                         ({"util": {"b0r0l0->s0": -0.1}}, "util -0.1 is not a number >= 0"),
                         ({"loss": {"b0r0l0->s0": 1.5}}, "loss 1.5 is not in"),
                         ({"util": {"b0r0l0->s0": 0.1, "b0r0l0->nowhere": 0.2}}, "no link direction")]:
        with pytest.raises(ValueError, match=re.escape(message)):
            view.update_links(**bad)
    assert view.version == 1 and view.snapshot()["links"]["b0r0l0->s0"]["util"] == 0.5, "nothing changed"
    view.update_links()
    assert view.version == 1, "an empty update is no change"


def test_estimates_set_state_and_loss(view: MonitorView) -> None:
    view.update_estimates([LinkEstimate(LinkDir("b1r0l0", "s1"), "lossy", 0.2, 0.0, 4, 4),
                           LinkEstimate(LinkDir("s1", "b1r0l0"), "ok", 0.0, 0.0, 4, 0)])
    links = view.snapshot(with_fabric=False)["links"]
    assert (links["b1r0l0->s1"]["state"], links["b1r0l0->s1"]["loss"]) == ("lossy", 0.2)
    assert links["s1->b1r0l0"]["state"] == "ok"


def test_evidence_sets_states_and_liveness(view: MonitorView) -> None:
    ev = Evidence(104.0, links={"b0r1l0->s0": LinkEstimate(LinkDir("b0r1l0", "s0"), "corrupting", 0.0, 0.1, 3, 3)},
                  switch_up={"s0": True, "s1": False})
    view.update_from_evidence(ev)
    snap = view.snapshot(with_fabric=False)
    assert snap["links"]["b0r1l0->s0"]["state"] == "corrupting" and snap["switches"]["s1"] is False
    assert [(e["text"], e["t_rel_s"]) for e in snap["events"]] == [("switch s1 down", 4.0)]


def test_parallel_names_update_every_cable() -> None:
    v = MonitorView(build_fabric(FabricSpec(uplinks_per_spine=2)))
    v.update_links(state={"b0r0l0->s0": "dead"})
    links = v.snapshot()["links"]
    assert links["b0r0l0:3->s0"]["state"] == links["b0r0l0:4->s0"]["state"] == "dead"
    assert links["s0:1->b0r0l0"]["state"] == "unknown"


def test_switches_up_and_down_are_events_once(view: MonitorView) -> None:
    view.set_switch_up("s1", True)
    assert view.version == 0, "already up: no change"
    view.set_switch_up("s1", False)
    view.set_switch_up("s1", False)
    snap = view.snapshot()
    assert snap["version"] == 1 and snap["switches"]["s1"] is False
    assert [e["text"] for e in snap["events"]] == ["switch s1 down"]
    with pytest.raises(ValueError, match="no switch 'b9r9l9'"):
        view.set_switch_up("b9r9l9", False)


def test_faults_are_shown_until_undone(view: MonitorView) -> None:
    view.add_fault("gray-1", "gray_link", component("link", "b1r0l0", "s1"), detail="20% loss")
    snap = view.snapshot()
    assert snap["faults"][0]["name"] == "gray-1"
    assert snap["faults"][0]["targets"] == {"links": ["b1r0l0->s1"], "nodes": []}
    view.undo_fault("gray-1")
    snap = view.snapshot()
    assert snap["faults"] == []
    assert [e["kind"] for e in snap["events"]] == ["fault_undone", "fault"]
    assert snap["events"][1]["text"] == "fault gray-1 injected: gray_link on link b1r0l0->s1 (20% loss)"
    with pytest.raises(ValueError, match="no active fault named 'gray-1'"):
        view.undo_fault("gray-1")


def test_verdicts_are_named_updated_and_cleared(view: MonitorView) -> None:
    clock = view._clock
    assert isinstance(clock, Clock)
    v1 = Verdict("gray_link", "link b1r0l0->s1", 0.8, ("2 of 4 paths lose",), 101.5)
    view.add_verdict(v1)
    view.add_verdict(v1)
    assert view.version == 1, "the same verdict again is no change"
    view.add_verdict(Verdict("gray_link", "link b1r0l0->s1", 0.95, ("4 of 4 paths lose",), 103.0))
    snap = view.snapshot()
    assert snap["version"] == 2 and len(snap["events"]) == 1, "an update is not a new event"
    row = snap["verdicts"][0]
    assert (row["confidence"], row["evidence"], row["t_s"], row["t_rel_s"]) == (0.95, ["4 of 4 paths lose"], 101.5, 1.5)
    assert row["targets"]["links"] == ["b1r0l0->s1"]
    clock.t_s = 110.0
    hung = Verdict("hung_switch", "switch s0", 0.9, ("P4Runtime silent",), 110.0)
    view.set_verdicts([hung])
    snap = view.snapshot()
    assert [(v["kind"], v["component"]) for v in snap["verdicts"]] == [("hung_switch", "switch s0")]
    assert [e["kind"] for e in snap["events"]] == ["verdict", "verdict_cleared", "verdict"]
    assert snap["events"][1]["text"] == "verdict cleared: gray_link at link b1r0l0->s1"
    view.clear_verdict("gray_link", "link b1r0l0->s1")
    assert view.snapshot()["version"] == snap["version"], "clearing what is not named is no change"


def test_timeline_is_newest_first_and_bounded() -> None:
    clock = Clock(50.0)
    v = MonitorView(build_fabric(), max_events=3, clock=clock, wall=lambda: 3600.0 * 7)
    for i in range(5):
        clock.t_s = 50.0 + i
        v.add_move(f"flow{i}", "b0r0l0->s0", "b0r0l0->s1")
    events = v.snapshot()["events"]
    assert [e["flow"] for e in events] == ["flow4", "flow3", "flow2"]
    assert events[0]["text"] == "GOR moved flow4: b0r0l0->s0 → b0r0l0->s1"
    assert (events[0]["t_rel_s"], events[0]["wall"], events[0]["id"]) == (4.0, "07:00:00", 5)
    with pytest.raises(ValueError, match="unknown event kind 'party'"):
        v.add_event("party", "no")
    with pytest.raises(ValueError, match="max_events must be at least 1"):
        MonitorView(build_fabric(), max_events=0)


def test_listeners_hear_every_change(view: MonitorView) -> None:
    heard: list[int] = []
    listener = lambda: heard.append(view.version)  # noqa: E731
    view.add_listener(listener)
    view.add_event("note", "hello")
    view.set_switch_up("s0", False)
    view.remove_listener(listener)
    view.add_event("note", "not heard")
    assert heard == [1, 2]


def test_updates_from_many_threads_are_all_counted(view: MonitorView) -> None:
    def work(k: int) -> None:
        for i in range(50):
            view.update_links(util={"b0r0l0->s0": (k * 50 + i) / 1000})
            view.add_event("note", f"{k}/{i}")
    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(30)
    snap = view.snapshot()
    assert snap["version"] == 400
    assert len({e["id"] for e in snap["events"]}) == 200


def test_the_snapshot_is_json(view: MonitorView) -> None:
    view.add_verdict(Verdict("corruption", "link s0->b1r1l0", 0.7, ("bad ICRC at b1s0-eth1",), 100.0))
    snap = view.snapshot()
    assert json.loads(json.dumps(snap)) == snap
    assert "fabric" not in view.snapshot(with_fabric=False)


# ------------------------------------------------------------------------------ the app
def test_routes(view: MonitorView) -> None:
    client = TestClient(create_app(view))
    page = client.get("/")
    assert page.status_code == 200 and 'id="fabric"' in page.text and "static/app.js" in page.text
    assert client.get("/static/app.js").headers["content-type"].startswith(("text/javascript",
                                                                           "application/javascript"))
    assert client.get("/static/style.css").status_code == 200
    assert client.get("/healthz").text == "ok\n"
    view.set_switch_up("s1", False)
    state = client.get("/api/state").json()
    assert state == {**view.snapshot(), "t_rel_s": state["t_rel_s"]}
    assert "fabric" not in client.get("/api/state?fabric=0").json()
    bad = client.get("/api/state?fabric=yes")
    assert bad.status_code == 400 and "fabric must be 0 or 1" in bad.text
    bad = client.get("/api/events?limit=many")
    assert bad.status_code == 400 and "limit must be a whole number" in bad.text


def test_event_stream_format(view: MonitorView) -> None:
    view.add_event("note", "hello")
    resp = TestClient(create_app(view)).get("/api/events?limit=1")
    assert resp.headers["content-type"].startswith("text/event-stream")
    event = _parse_events(resp.text)[0]
    assert event["event"] == "state" and event["id"] == "1" and event["retry"] == "1000"
    data = json.loads(event["data"])
    assert data["version"] == 1 and "fabric" in data and data["events"][0]["text"] == "hello"


def test_the_page_needs_nothing_from_elsewhere() -> None:
    for path in STATIC_DIR.iterdir():
        text = path.read_text().replace("http://www.w3.org/2000/svg", "")
        assert not re.search(r"(https?:)?//[a-z0-9.-]+\.[a-z]{2,}/", text), f"{path.name} fetches from elsewhere"


def _parse_events(text: str) -> list[dict[str, str]]:
    events = []
    for block in text.split("\n\n"):
        fields: dict[str, str] = {}
        for line in block.splitlines():
            if line and not line.startswith(":"):
                key, _, value = line.partition(": ")
                fields[key] = value
        if fields:
            events.append(fields)
    return events


# ------------------------------------------------------------------------------ the server
def _read_event(resp: http.client.HTTPResponse) -> dict[str, Any]:
    """The next ``state`` event of an open stream (the socket's timeout bounds the wait)."""
    lines: list[str] = []
    while True:
        line = resp.readline().decode()
        if line == "":
            raise AssertionError(f"the stream ended; read so far: {lines}")
        line = line.rstrip("\n")
        if line == "" and any(not l.startswith(":") for l in lines):
            break
        if line:
            lines.append(line)
    return _parse_events("\n".join(lines))[0]


def test_server_streams_each_change_live_and_stops_with_streams_open(view: MonitorView) -> None:
    server = WebServer(view).start()
    try:
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/", server.url) and server.port > 0
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
        conn.request("GET", "/api/events")
        resp = conn.getresponse()
        assert resp.status == 200
        first = json.loads(_read_event(resp)["data"])
        assert first["version"] == 0 and "fabric" in first
        view.update_links(state={"b1r0l0->s1": "dead"})
        second = json.loads(_read_event(resp)["data"])
        assert second["version"] == 1 and "fabric" not in second
        assert second["links"]["b1r0l0->s1"]["state"] == "dead"
        view.add_move("f", "b0r0l0->s0", "b0r0l0->s1")
        assert json.loads(_read_event(resp)["data"])["events"][0]["kind"] == "move"
    finally:
        started = time.monotonic()
        server.stop()          # with the stream still open: it must end, not hang
        stop_s = time.monotonic() - started
    assert stop_s < 1.5, f"stopping took {stop_s:.2f} s: the open stream held the server"
    resp.read()                # the stream has ended: read to its end (a hang would time out)
    conn.close()
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", server.port), timeout=1).close()


def test_server_says_when_its_port_is_taken(view: MonitorView) -> None:
    with WebServer(view) as first:
        with pytest.raises(WebServerError, match=rf"cannot serve the web view on 127\.0\.0\.1:{first.port}: "
                                                 r".*in use.*choose another port"):
            WebServer(view, port=first.port).start()


def test_server_starts_again_after_a_stop(view: MonitorView) -> None:
    server = WebServer(view)
    server.stop()              # never started: nothing to do
    for _ in range(2):
        with server:
            conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
            conn.request("GET", "/api/events?limit=1")
            assert json.loads(_read_event(conn.getresponse())["data"])["version"] == 0
            conn.close()
        server.port = 0
