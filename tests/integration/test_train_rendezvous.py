"""With ``trainplay rendezvous`` serving the store, the first training node may die too.

A rendezvous server and three one-process ``trainplay train`` nodes on localhost; once the job
runs on all three, the first node started (which, without the server, would host the store) is
SIGKILLed with its workers. The other two must finish with every sample once and the parameters
of one process; the server is stopped with SIGTERM at the end and exits 0.
"""

from __future__ import annotations

import signal

from tests.integration.elastic import dump, free_port, nodes, wait_for, wait_listening
from tests.integration.test_train_elastic import (
    STEPS,
    check_parameters,
    check_trajectory,
    job_args,
)


def test_the_first_node_dies_and_the_others_go_on(tmp_path):
    journal, port = tmp_path / "journal.jsonl", free_port()
    (tmp_path / "server").mkdir()
    serve = ["-m", "trainplay", "rendezvous", "--host", "127.0.0.1", "--port", str(port)]
    with (
        nodes(tmp_path / "server", [], serve) as server,
        nodes(tmp_path, job_args(tmp_path, "2:3", port)) as job,
    ):
        server.start()
        assert wait_listening(port, 60), server.log(0)
        for _ in range(3):
            job.start()
        seen = wait_for(journal, lambda e: e["event"] == "step" and e["step"] >= 12, 120)
        assert seen is not None and seen["world_size"] == 3, dump(journal) + job.log(0)
        job.kill(0, workers=True)
        codes = [job.wait(k, 240) for k in (1, 2)]
        assert codes == [0, 0], job.log(1) + job.log(2)
        assert not any(job.left_behind(k) for k in range(3))
        assert "rendezvous on 127.0.0.1" in server.log(0)
        server.procs[0].send_signal(signal.SIGTERM)
        assert server.wait(0, 10) == 0, server.log(0)
    events = check_trajectory(journal, STEPS)
    assert any(e["event"] == "replan" and e["reason"] == "leave" for e in events)
    check_parameters(tmp_path, STEPS)
