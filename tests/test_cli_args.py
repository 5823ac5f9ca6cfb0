"""Bad flags: refused by argparse (exit 2, one line naming the flag) or as bad input, never a traceback."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from kubesched.cli import main

ROOT = Path(__file__).resolve().parents[1]
CLUSTER = str(ROOT / "examples" / "cluster.yaml")
POD = str(ROOT / "examples" / "pod.yaml")
REPLAY = [str(ROOT / "examples" / "replay" / "cluster.yaml"), str(ROOT / "examples" / "replay" / "trace.csv"), "-q"]
BENCH = ["bench", "--nodes", "2", "--pods", "2", "--init-pods", "0", "--reps", "1"]


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The error line argparse printed for `argv` (it exits with status 2)."""
    with pytest.raises(SystemExit) as info:
        main(list(argv))
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    return err.strip().splitlines()[-1]


def bad_input(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The one line `kubesched` printed for bad input (status 2)."""
    assert main(list(argv)) == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err.strip()


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--nodes", "0"], "argument --nodes: must be an integer >= 1, got '0'"),
        (["--nodes", "-5"], "argument --nodes: must be an integer >= 1, got '-5'"),
        (["--nodes", "many"], "argument --nodes: must be an integer >= 1, got 'many'"),
        (["--pods", "0"], "argument --pods: must be an integer >= 1, got '0'"),
        (["--init-pods", "-1"], "argument --init-pods: must be an integer >= 0, got '-1'"),
        (["--reps", "0"], "argument --reps: must be an integer >= 1, got '0'"),
    ],
)
def test_bench_counts(capsys: pytest.CaptureFixture[str], argv: list[str], expected: str) -> None:
    assert refused(capsys, *BENCH, *argv) == f"kubesched bench: error: {expected}"


def test_bench_profile_checked_before_the_run(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    err = bad_input(capsys, *BENCH, "--profile", str(tmp_path))
    assert err == f"error: {tmp_path}: cannot write: is a directory"
    err = bad_input(capsys, *BENCH, "--profile", str(tmp_path / "no" / "b.prof"))
    assert err == f"error: {tmp_path / 'no' / 'b.prof'}: cannot write: no such directory"


def test_bench_smallest_run(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*BENCH[:2], "1", "--pods", "1", "--init-pods", "0", "--reps", "1", "-o", "json"]) == 0
    assert '"nodes": 1' in capsys.readouterr().out


def test_capacity_max(capsys: pytest.CaptureFixture[str]) -> None:
    line = refused(capsys, "capacity", CLUSTER, "--pod", POD, "--max", "-1")
    assert line == "kubesched capacity: error: argument --max: must be an integer >= 0, got '-1'"


@pytest.mark.parametrize("value", ["-1", "inf", "nan", "1e400", "soon"])
def test_replay_until(capsys: pytest.CaptureFixture[str], value: str) -> None:
    line = refused(capsys, "replay", *REPLAY, "--until", value)
    assert line == f"kubesched replay: error: argument --until: must be a finite number of seconds >= 0, got '{value}'"


def test_replay_outputs_checked_before_the_replay(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for flag in ("--json", "--report"):
        assert (
            bad_input(capsys, "replay", *REPLAY, flag, str(tmp_path))
            == f"error: {tmp_path}: cannot write: is a directory"
        )


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--port", "99999"], "argument --port: must be a port number from 0 to 65535 (0: any free port), got '99999'"),
        (["--port", "-1"], "argument --port: must be a port number from 0 to 65535 (0: any free port), got '-1'"),
        (["--history", "-1"], "argument --history: must be an integer >= 0, got '-1'"),
        (["--bookmark-interval", "0"], "argument --bookmark-interval: must be a finite number of seconds > 0, got '0'"),
    ],
)
def test_serve_flags(capsys: pytest.CaptureFixture[str], argv: list[str], expected: str) -> None:
    assert refused(capsys, "serve", CLUSTER, *argv) == f"kubesched serve: error: {expected}"


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--port", "65536"], "argument --port: must be a port number from 0 to 65535 (0: any free port), got '65536'"),
        (["--bind-workers", "0"], "argument --bind-workers: must be an integer >= 1, got '0'"),
    ],
)
def test_run_flags(capsys: pytest.CaptureFixture[str], argv: list[str], expected: str) -> None:
    assert refused(capsys, "run", *argv) == f"kubesched run: error: {expected}"


def test_serve_files_checked_before_listening(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    base = ["serve", CLUSTER, "--port", "0", "--no-scheduler"]
    missing = tmp_path / "missing.pem"
    err = bad_input(capsys, *base, "--tls-cert-file", str(missing))
    assert err == f"error: {missing}: --tls-cert-file: cannot read: No such file or directory"
    err = bad_input(capsys, *base, "--tls-cert-file", CLUSTER)
    assert err.startswith(f"error: {CLUSTER}: --tls-cert-file: not a PEM certificate and key")
    err = bad_input(capsys, *base, "--tls-private-key-file", CLUSTER)
    assert err == "error: --tls-private-key-file: needs --tls-cert-file"
    err = bad_input(capsys, *base, "--write-kubeconfig", str(tmp_path))
    assert err == f"error: {tmp_path}: cannot write: is a directory"


@pytest.fixture
def busy_port() -> Iterator[int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield int(s.getsockname()[1])


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "kubesched.cli", *argv],
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


def test_serve_port_in_use_is_one_line(busy_port: int) -> None:
    p = _cli("serve", CLUSTER, "--no-scheduler", "--port", str(busy_port))
    assert p.returncode == 1, p.stderr
    assert p.stderr.strip().splitlines()[-1] == (
        f"error: cannot listen on 127.0.0.1:{busy_port}: error while attempting to bind on address "
        f"('127.0.0.1', {busy_port}): address already in use"
    )
    assert "Traceback" not in p.stderr


def test_run_port_in_use_and_bad_address_are_one_line(tmp_path: Path, busy_port: int) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    from kubesched.live.kubeconfig import write_kubeconfig

    write_kubeconfig(str(kubeconfig), "http://127.0.0.1:9")  # never reached: the health port fails first
    common = ["run", "--kubeconfig", str(kubeconfig), "--logging-format", "json"]
    p = _cli(*common, "--port", str(busy_port))
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert f"error: cannot listen on 127.0.0.1:{busy_port}: " in p.stderr
    p = _cli(*common, "--port", "0", "--bind-address", "no-such-host.invalid")
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    assert "error: cannot listen on no-such-host.invalid:0: " in p.stderr


def test_kubeconfig_directory(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    for cmd in ("run", "snapshot"):
        assert (
            bad_input(capsys, cmd, "--kubeconfig", str(tmp_path)) == f"error: {tmp_path}: cannot read: Is a directory"
        )


def test_output_that_cannot_be_written(tmp_path: Path) -> None:
    """A full disk is one line (status 1); a reader that goes away (`| head`) ends the command quietly."""
    p = subprocess.run(
        [sys.executable, "-m", "kubesched.cli", "simulate", CLUSTER, "-o", "json"],
        stdout=open("/dev/full", "w"),  # noqa: SIM115 - closed with the process
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
    )
    assert p.returncode == 1 and p.stderr == "error: cannot write the output: No space left on device\n"
    # A table small enough to sit in the buffer until the command's end fails there, and says so alike.
    p = subprocess.run(
        [sys.executable, "-m", "kubesched.cli", "simulate", CLUSTER],
        stdout=open("/dev/full", "w"),  # noqa: SIM115 - closed with the process
        stderr=subprocess.PIPE,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"},
    )
    assert p.returncode == 1 and p.stderr == "error: cannot write the output: No space left on device\n"

    nodes = "".join(
        f"---\napiVersion: v1\nkind: Node\nmetadata: {{name: n{i}}}\nstatus: {{capacity: {{cpu: '4', pods: '9'}}}}\n"
        for i in range(200)
    )
    pods = "".join(
        f"---\napiVersion: v1\nkind: Pod\nmetadata: {{name: p{i}}}\nspec: {{containers: [{{name: c, image: x}}]}}\n"
        for i in range(50)
    )
    (tmp_path / "big.yaml").write_text(nodes + pods)
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubesched.cli", "simulate", str(tmp_path / "big.yaml"), "-o", "json"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdout is not None and proc.stderr is not None
    proc.stdout.read(10)
    proc.stdout.close()
    assert proc.wait(60) == 141
    assert proc.stderr.read() == b""
    proc.stderr.close()


def test_serve_on_ipv6_writes_a_usable_url(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kubeconfig"
    args = [
        "serve",
        CLUSTER,
        "--no-scheduler",
        "--address",
        "::1",
        "--port",
        "0",
        "--write-kubeconfig",
        str(kubeconfig),
    ]
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubesched.cli", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        if not line:
            pytest.skip(f"no IPv6 loopback here: {proc.communicate(timeout=10)[1].strip()}")
        url = line.split()[1]
        assert url.startswith("http://[::1]:"), line
        assert f"server: {url}" in kubeconfig.read_text()
        with urllib.request.urlopen(url + "/version", timeout=10) as resp:
            assert resp.status == 200
    finally:
        proc.terminate()
        proc.communicate(timeout=10)


def test_program_output_is_whole_after_its_fast_exit(capsys: pytest.CaptureFixture[str]) -> None:
    """The program leaves without freeing its heap (os._exit): what it printed must all be flushed first."""
    assert main(["simulate", CLUSTER, "-o", "json"]) == 0
    expected = capsys.readouterr().out
    # Block-buffered stdout, as a program's output into a pipe is by default.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    p = subprocess.run(
        [sys.executable, "-m", "kubesched.cli", "simulate", CLUSTER, "-o", "json"],
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
    )
    assert p.returncode == 0 and p.stdout == expected and json.loads(p.stdout)
    bad = subprocess.run(
        [sys.executable, "-m", "kubesched.cli", "simulate", "no-such-file.yaml"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert bad.returncode == 2 and bad.stderr.startswith("error: no-such-file.yaml")


def test_program_runs_no_collector_pass_when_it_exits_fast() -> None:
    """simulate's program turns the cyclic collector off for the command: re-enabling it at the end would pass
    over everything the simulation allocated, just before os._exit throws the heap away."""
    probe = (
        "import gc, sys\n"
        "from kubesched import cli\n"
        "gc.callbacks.append(lambda phase, info: phase == 'start' and sys.stderr.write('pass\\n'))\n"
        "command = cli._run_command\n"
        "cli._run_command = lambda args: sys.stderr.write('command\\n') and command(args)\n"
        f"sys.argv = ['kubesched', 'simulate', {CLUSTER!r}]\n"
        "cli.run()\n"
    )
    p = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "pod" in p.stdout.lower()
    events = p.stderr.split()
    assert "command" in events and "pass" not in events[events.index("command") :]
