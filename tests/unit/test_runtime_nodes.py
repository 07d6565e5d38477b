"""The devices present: each node's announcement, the cluster all ranks build, the journal."""

from __future__ import annotations

import json
import socket

import pytest

from trainplay.errors import UsageError
from trainplay.hardware.cluster import parse_cluster
from trainplay.plan.costs import devices_of
from trainplay.runtime.journal import Journal, read_journal, trajectory
from trainplay.runtime.nodes import LOOPBACK, NAME_ENV, NodeDevices, present_cluster, this_node

CPU = {
    "name": "cpu-rank0",
    "peak_flops": {"fp32": 300e9},
    "mem_bw_bps": 20e9,
    "mem_bytes": 24 * 2**30,
    "count": 1,
    "measured": [{"apf": 280e9, "apm": 21e9, "dtype": "fp32"}],
}
LAB = {
    "name": "lab",
    "nodes": [
        {"name": "volta", "devices": [{"type": "V100-16GB", "count": 2}], "intra_link": "nvlink2"},
        {"name": "turing", "devices": [{"type": "T4", "count": 4}], "intra_link": "pcie3"},
    ],
    "inter_link": "10gbe",
}


def test_processes_on_one_cpu_share_its_peaks():
    node = this_node(
        parse_cluster({"name": "local", "nodes": [{"name": "vm", "devices": [CPU]}]}),
        name="n",
        nproc=2,
    )
    assert len(node.devices) == 2 and node.name == "n"
    assert node.devices[0]["measured"][0]["apf"] == pytest.approx(140e9)
    assert node.devices[0]["mem_bytes"] == 12 * 2**30
    assert node.intra_link == LOOPBACK.to_dict()


def test_a_named_node_of_a_cluster_file():
    node = this_node(parse_cluster(LAB), name="turing", nproc=3)
    assert [d["name"] for d in node.devices] == ["T4"] * 3
    assert node.intra_link == "pcie3" and node.inter_link == "10gbe"
    with pytest.raises(UsageError, match="pass --node-name"):
        this_node(parse_cluster(LAB), name=None, nproc=1)
    with pytest.raises(UsageError, match="has 2 devices; --nproc-per-node 3"):
        this_node(parse_cluster(LAB), name="volta", nproc=3)


def test_ranks_build_the_same_cluster_and_ids_as_the_planner():
    lab = parse_cluster(LAB)
    volta = NodeDevices.from_json(this_node(lab, name="volta", nproc=2).to_json())
    turing = NodeDevices.from_json(this_node(lab, name="turing", nproc=1).to_json())
    entries = [("volta", 0, volta), ("volta", 1, volta), ("turing", 0, turing)]
    cluster, ids = present_cluster(entries)
    assert ids == ["volta/V100-16GB:0", "volta/V100-16GB:1", "turing/T4:0"]
    assert [d.id for d in devices_of(cluster, "fp32")] == ids
    assert cluster.inter_link is not None and cluster.nodes[0].intra_link is not None


def test_a_node_is_named_after_its_host_unless_told(monkeypatch):
    monkeypatch.delenv(NAME_ENV, raising=False)
    local = parse_cluster({"name": "local", "nodes": [{"name": "vm", "devices": [CPU]}]})
    assert this_node(local, name=None, nproc=1).name == socket.gethostname()
    monkeypatch.setenv(NAME_ENV, "rack2-node7")
    assert this_node(local, name=None, nproc=1).name == "rack2-node7"
    assert this_node(local, name="given", nproc=1).name == "given"


def test_two_nodes_of_one_name_are_refused():
    local = parse_cluster({"name": "local", "nodes": [{"name": "vm", "devices": [CPU]}]})
    node = this_node(local, name="host", nproc=1)
    with pytest.raises(UsageError, match=r"two nodes are named 'host'.*its own --node-name"):
        present_cluster([("host", 0, node), ("host", 0, node)])


def test_journal_lines_and_the_final_trajectory(tmp_path):
    journal = Journal(tmp_path / "run.jsonl")
    for step in (0, 1, 2, 1, 2, 3):  # steps 1 and 2 redone after a restore
        journal.write("step", step=step, loss=float(step))
    journal.close()
    with (tmp_path / "run.jsonl").open("a") as f:
        f.write('{"event": "st')  # a line cut short by a crash
    events = read_journal(tmp_path / "run.jsonl")
    assert len(events) == 6 and all("time_s" in e for e in events)
    assert [e["step"] for e in trajectory(events)] == [0, 1, 2, 3]
    assert trajectory(events)[1] is events[3]
    json.dumps(events)


def test_a_node_travels_to_its_workers_in_a_file_or_inline(tmp_path):
    """A node's profiles outgrow one environment variable (128 KiB on Linux), so the launcher
    hands its workers a file's path; the JSON itself is read too."""
    alone = {"apf": 600e9, "apm": 40e9, "dtype": "fp32"}
    cpu = {**CPU, "measured": [{**CPU["measured"][0], "alone": alone}]}
    cluster = parse_cluster({"name": "local", "nodes": [{"name": "vm", "devices": [cpu]}]})
    node = this_node(cluster, name="n", nproc=1)
    path = tmp_path / "node.json"
    path.write_text(node.to_json())
    assert NodeDevices.from_env(str(path)) == node == NodeDevices.from_env(node.to_json())
    (device,) = devices_of(present_cluster([("n", 0, node)])[0], "fp32")
    assert device.alone is not None and device.alone.apf == 600e9
