#!/usr/bin/env python3
"""One model split across processes with MPI, on this machine (mpirun -n 2 and 3, oversubscribed):
- the logits of every position of a 100-token prompt and 8 greedy tokens are bit for bit those of
  one process (batch 512 there, steps of 64 in the pipeline), on each real model;
- `brasa run` writes the same text (with --split shares too, and the model found by its file name in
  --model-dir's folder for this machine), `brasa bench --json` reports the
  pipeline and its link, and `brasa serve` answers the openai client (concurrent requests, a
  stream) as one process does;
- a process killed in the middle of a stream: the client gets an error, mpirun ends non-zero within
  10 s, and no process is left;
- `brasa fit` under mpirun measures every process's machine (processes on one machine share its
  memory) and plans the layers as the engine then splits them;
- another process's model file differs, or is missing: a clear error naming it, non-zero status;
- two "hosts" (network namespaces joined by a veth pair; as root, where `ip netns` works): Open
  MPI's TCP transport between them, the second host's processes started inside its namespace by a
  launcher agent in place of ssh; the same logits as one process, and bench's figures over it.

With --quick (the sanitized build, where every program runs several times slower and any report
fails the step): two processes only, the first model's logits, run and bench, the server with the
first model (answers and the killed process), the mismatched files; Open MPI's own allocations,
kept until exit by design, are left out of the leak reports by tests/engine/openmpi_leaks.supp.

Usage: test_pipeline_mpi.py [--quick] --brasa BRASA --logits-dump LOGITS_DUMP --model GGUF [--model ...]
"""
import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, ".."))
sys.path.insert(0, os.path.join(HERE, "..", "server"))
from checks import Checks  # noqa: E402

CHECKS = Checks("pipeline")
expect = CHECKS.expect
TOKENS = " ".join(str((i * 7919) % 49000) for i in range(100))  # ids every vocabulary here has
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1", "OMPI_MCA_rmaps_base_oversubscribe": "1"}


def mpirun(n):
    return ["mpirun", "-n", str(n)]


def env():
    return dict(os.environ, **MPI_ENV)


def run(cmd, timeout=600):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env())


def brasa_processes(runtime_dir=None):
    """PIDs of processes whose command line names a brasa program, those of one server (its private
    XDG_RUNTIME_DIR, which mpirun hands on) when runtime_dir is given: other tests run beside this."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except OSError:
            continue
        if not argv or os.path.basename(argv[0]) not in (b"brasa", b"logits_dump"):
            continue
        if runtime_dir:
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    if f"XDG_RUNTIME_DIR={runtime_dir}".encode() not in f.read().split(b"\0"):
                        continue
            except OSError:
                continue
        found.append(int(pid))
    return found


def rank_pid(rank, runtime_dir):
    """The PID of one server's brasa process of MPI rank `rank` (from its environment)."""
    for pid in brasa_processes(runtime_dir):
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if f"OMPI_COMM_WORLD_RANK={rank}".encode() in f.read().split(b"\0"):
                    return pid
        except OSError:
            pass
    return None


def dump(a, model, work, name, launcher=(), batch=None):
    out = os.path.join(work, name)
    cmd = [*launcher, a.logits_dump, model, "--out", out, "--tokens", TOKENS, "--threads", "1", "--greedy", "8"]
    if batch:
        cmd += ["--batch", str(batch)]
    p = run(cmd)
    if not expect(f"{name} ran", p.returncode == 0, p.stderr[-800:]):
        return None, None
    with open(out, "rb") as f:
        return f.read(), p.stdout.strip()


def check_logits(a, model, work, counts=(2, 3)):
    base = os.path.basename(model)
    one, one_tokens = dump(a, model, work, f"{base}.one", batch=512)
    for n in counts:
        many, tokens = dump(a, model, work, f"{base}.np{n}", launcher=mpirun(n))
        if one is None or many is None:
            continue
        expect(f"{base}: {n} processes give one process's logits bit for bit", many == one,
               f"{len(many)} against {len(one)} bytes, first difference at byte "
               f"{next((i for i, (x, y) in enumerate(zip(many, one)) if x != y), -1)}")
        expect(f"{base}: {n} processes give one process's greedy tokens", tokens == one_tokens, f"{tokens} vs {one_tokens}")


def check_run_and_bench(a, model):
    prompt = ["-p", "The capital of France is", "-n", "24", "--temp", "0", "--threads", "1"]
    one = run([a.brasa, "run", "-m", model, *prompt])
    for split in (None, "1,3"):
        extra = ["--split", split] if split else []
        two = run([*mpirun(2), a.brasa, "run", "-m", model, *prompt, *extra])
        expect(f"run under 2 processes{' --split ' + split if split else ''}: same text", two.returncode == 0 and
               two.stdout == one.stdout and one.stdout.strip(), f"{two.stdout!r} vs {one.stdout!r} {two.stderr[-400:]}")
    # --model-dir: each machine's folder (this machine named among others), the model by its file name
    folder, name = os.path.split(os.path.abspath(model))
    host = socket.gethostname()
    for dirs in (folder, f"elsewhere:/nonexistent,{host}:{folder}", f"elsewhere:/nonexistent,{folder}"):
        got = run([*mpirun(2), a.brasa, "run", "-m", name, "--model-dir", dirs, *prompt])
        expect(f"run under 2 processes with --model-dir {dirs!r}: same text", got.returncode == 0 and got.stdout == one.stdout,
               f"{got.stdout!r} vs {one.stdout!r} {got.stderr[-400:]}")
    for dirs, why in (("/nonexistent", "no folder"), ("elsewhere:/x", "no folder for this machine"),
                      ("elsewhere:", "HOST:FOLDER"), (f"{host}:{folder},{host}:/x", "two folders"),
                      (f"{folder},/x", "two folders")):
        bad = run([*mpirun(2), a.brasa, "run", "-m", name, "--model-dir", dirs, *prompt])
        expect(f"--model-dir {dirs!r}: an error saying why", bad.returncode != 0 and why in bad.stderr, bad.stderr[-400:])
    for args, why in ((["run", "-m", name, "--model-dir", folder, "--model-dir", folder, *prompt], "given twice"),
                      (["list", "--model-dir", folder], "commands that open a model")):
        bad = run([a.brasa, *args])
        expect(f"brasa {args[0]} with {why!r}: an error", bad.returncode != 0 and why in bad.stderr, bad.stderr[-400:])
    alone = run([a.brasa, "run", "-m", model, *prompt, "--split", "1,1"])
    expect("--split in a process started alone: an error naming it", alone.returncode != 0 and "--split" in alone.stderr,
           alone.stderr[-400:])
    bad = run([*mpirun(2), a.brasa, "run", "-m", model, *prompt, "--split", "1,0"])
    expect("--split with a share of 0: an error naming it", bad.returncode != 0 and "--split" in bad.stderr, bad.stderr[-400:])
    with tempfile.TemporaryDirectory(prefix="brasa-pipe-cache-") as cache:
        p = subprocess.run([*mpirun(2), a.brasa, "bench", "-m", model, "-p", "64", "-n", "8", "-r", "1", "-t", "1", "--json"],
                           capture_output=True, text=True, timeout=600, env=dict(env(), BRASA_CACHE_DIR=cache))
    doc = None
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        pass
    ok = doc is not None and doc.get("pipeline", {}).get("processes") == 2 and "pipeline of 2 processes" in doc["backend"]
    expect("bench under 2 processes reports the pipeline and its link", ok and
           doc["pipeline"]["link_round_trip_seconds"]["one_row"] > 0 and
           all("link_share" in r for r in doc["results"]) and len(doc["results"]) == 2, p.stdout[-600:] + p.stderr[-400:])


def meminfo():
    with open("/proc/meminfo") as f:
        return {line.split(":")[0]: int(line.split()[1]) * 1024 for line in f}


def check_fit_measured(a, model):
    """fit under mpirun: the processes' own memory, shared by those on one machine, and the engine's split."""
    total = meminfo()["MemTotal"]
    for n in (2, 3):
        p = run([*mpirun(n), a.brasa, "fit", model, "--device", "cpu", "--json"])
        try:
            doc = json.loads(p.stdout)
        except ValueError:
            doc = None
        if not expect(f"fit under {n} processes: a plan", p.returncode == 0 and doc is not None,
                      p.stdout[-400:] + p.stderr[-400:]):
            continue
        hs = doc["hosts"]
        expect(f"fit under {n} processes: measured, one host each, this machine's memory shared {n} ways",
               doc["measured"] and len(hs) == n and
               all(abs(h["memory_bytes"] - total / n) < 1e6 and 0 < h["available_bytes"] <= h["memory_bytes"] for h in hs),
               f"{hs} against MemTotal {total}")
        expect(f"fit under {n} processes: contiguous layers",
               hs[0]["first_layer"] == 0 and hs[-1]["end_layer"] == doc["n_layer"] and
               all(hs[i]["end_layer"] == hs[i + 1]["first_layer"] for i in range(n - 1)), str(hs))
        b = run([*mpirun(n), a.brasa, "bench", "-m", model, "-p", "16", "-n", "2", "-r", "1", "-t", "1", "--json"])
        try:
            backend = json.loads(b.stdout)["backend"]
        except (ValueError, KeyError):
            backend = b.stdout[-300:] + b.stderr[-300:]
        want = f"layers 0-{hs[0]['end_layer'] - 1} of {doc['n_layer']} here"
        expect(f"fit under {n} processes: the engine runs the layers fit planned for process 0", want in backend,
               f"{want!r} not in {backend!r}")
    p = run([*mpirun(2), a.brasa, "fit", model, "--device", "cpu", "--json", "--hosts", "a:64G,b:64G"])
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        doc = None
    expect("fit under mpirun with --hosts: the hosts given", doc is not None and not doc["measured"] and
           [h["name"] for h in doc["hosts"]] == ["a", "b"], p.stdout[-300:] + p.stderr[-300:])


def wrapper(a, work, n):
    """A program that runs `brasa` under mpirun -n n, for the server helper."""
    path = os.path.join(work, f"brasa-np{n}")
    with open(path, "w") as f:
        f.write(f"#!/bin/sh\nexec mpirun -n {n} {a.brasa} \"$@\"\n")
    os.chmod(path, 0o755)
    return path


def ask_all(base):
    import openai
    c = openai.OpenAI(base_url=base + "/v1", api_key="none", max_retries=0)

    def ask(q):
        r = c.chat.completions.create(model="m", messages=[{"role": "user", "content": q}], max_tokens=20, temperature=0)
        return r.choices[0].message.content

    questions = ["Name three colors.", "What is 2+2?", "Say hello in French.", "Write a haiku about rain."]
    answers = [None] * len(questions)
    threads = [threading.Thread(target=lambda i=i: answers.__setitem__(i, ask(questions[i]))) for i in range(len(questions))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    stream = c.chat.completions.create(model="m", messages=[{"role": "user", "content": "Count to five."}], max_tokens=16,
                                       temperature=0, stream=True)
    answers.append("".join(ch.choices[0].delta.content or "" for ch in stream if ch.choices))
    return answers


def check_server(a, model, work):
    from serverproc import Server
    os.environ.update(MPI_ENV)
    one = Server(a.brasa, model, "--parallel", "4", "--threads", "1")
    try:
        want = ask_all(one.base) if one.port else None
    finally:
        one.stop()
    two = Server(wrapper(a, work, 2), model, "--parallel", "4", "--threads", "1")
    try:
        got = ask_all(two.base) if two.port else None
        expect("serve under 2 processes: the openai client's answers (4 at once, a stream) are one process's",
               got == want and want and all(want), f"{got} vs {want} {two.stderr()[-600:]}")
    finally:
        two.stop()
    time.sleep(1)
    left = brasa_processes(two.runtime_dir)
    expect("serve under 2 processes stopped: nothing left running", not left, str(left))

    # a process killed in the middle of a stream
    srv = Server(wrapper(a, work, 2), model, "--parallel", "2", "--threads", "1")
    if not expect("serve under 2 processes started", srv.port is not None, srv.stderr()[-600:]):
        srv.stop()
        return
    import openai
    c = openai.OpenAI(base_url=srv.base + "/v1", api_key="none", max_retries=0, timeout=30)
    error, pieces, killed_at = None, 0, None
    try:
        stream = c.chat.completions.create(model="m", messages=[{"role": "user", "content": "Tell a very long story."}],
                                           max_tokens=3000, temperature=0, stream=True)
        for ch in stream:
            pieces += 1
            if pieces == 5:
                victim = rank_pid(1, srv.runtime_dir)
                if victim is None:
                    break
                killed_at = time.time()
                os.kill(victim, signal.SIGKILL)
    except Exception as e:  # the connection drops or the server says so: either is an error the client sees
        error = e
    expect("a process killed mid-stream: the client gets an error", killed_at is not None and error is not None,
           f"pieces {pieces}, error {error!r}")
    try:
        status = srv.proc.wait(timeout=10 + max(0.0, (killed_at or time.time()) - time.time()))
    except subprocess.TimeoutExpired:
        status = None
    ended = time.time() - (killed_at or time.time())
    expect("a process killed mid-stream: mpirun ends non-zero within 10 s", status not in (None, 0) and ended <= 10,
           f"status {status} after {ended:.1f} s")
    if status is None:
        srv.stop(signal.SIGKILL)
    time.sleep(1)
    left = brasa_processes(srv.runtime_dir)
    expect("a process killed mid-stream: nothing left running", not left, str(left))
    for pid in left:
        os.kill(pid, signal.SIGKILL)


def check_mismatch(a, models):
    args = ["run", "-p", "Hi", "-n", "4", "--threads", "1"]
    p = run(["mpirun", "-n", "1", a.brasa, *args, "-m", models[0], ":", "-n", "1", a.brasa, *args, "-m", models[1]], timeout=120)
    expect("another process's different model file: an error naming it", p.returncode != 0 and
           "process 1" in p.stderr and "different model file" in p.stderr, p.stderr[-600:])
    p = run(["mpirun", "-n", "1", a.brasa, *args, "-m", models[0], ":", "-n", "1", a.brasa, *args, "-m", "/nonexistent/x.gguf"],
            timeout=120)
    expect("another process's missing model file: an error naming it", p.returncode != 0 and "process 1" in p.stderr and
           "x.gguf" in p.stderr, p.stderr[-600:])


AGENT = """#!/bin/sh
# Open MPI's remote launcher here: "[options] HOST COMMAND..." runs COMMAND in HOST's namespace
while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do shift; done
host="$1"; shift
case "$host" in
%s
  *) echo "no namespace for $host" >&2; exit 1 ;;
esac
exec ip netns exec "$ns" sh -c "$*"
"""


def check_two_hosts(a, models, work):
    if os.geteuid() != 0 or not shutil.which("ip"):
        print("two hosts skipped: network namespaces need root and iproute2")
        return
    tag = f"bp{os.getpid() % 100000}"
    net = f"10.{200 + os.getpid() % 50}.{os.getpid() % 250}"
    hosts = [(f"{tag}a", f"{net}.1", f"{tag}x"), (f"{tag}b", f"{net}.2", f"{tag}y")]
    setup = [["ip", "netns", "add", hosts[0][0]], ["ip", "netns", "add", hosts[1][0]],
             ["ip", "link", "add", hosts[0][2], "type", "veth", "peer", "name", hosts[1][2]]]
    for ns, addr, dev in hosts:
        setup += [["ip", "link", "set", dev, "netns", ns], ["ip", "-n", ns, "addr", "add", f"{addr}/24", "dev", dev],
                  ["ip", "-n", ns, "link", "set", dev, "up"], ["ip", "-n", ns, "link", "set", "lo", "up"]]
    try:
        for cmd in setup:
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode != 0:
                print(f"two hosts skipped: {' '.join(cmd)}: {p.stderr.strip()}")
                return
        agent = os.path.join(work, "netns-agent")
        with open(agent, "w") as f:
            f.write(AGENT % "\n".join(f"  {addr}) ns={ns} ;;" for ns, addr, _ in hosts))
        os.chmod(agent, 0o755)
        # --bind-to none: each "host" thinks it owns every core, and would pin its process to the same one
        launcher = ["ip", "netns", "exec", hosts[0][0], "mpirun", "--bind-to", "none", "--host", f"{hosts[0][1]},{hosts[1][1]}",
                    "-n", "2",
                    "--mca", "plm_rsh_agent", agent, "--mca", "btl", "self,tcp", "--mca", "btl_tcp_if_include", f"{net}.0/24",
                    "--mca", "oob_tcp_if_include", f"{net}.0/24"]
        for m in models[:2]:
            base = os.path.basename(m)
            one, one_tokens = dump(a, m, work, f"{base}.one-host", batch=512)
            two, tokens = dump(a, m, work, f"{base}.two-hosts", launcher=launcher)
            if one is not None and two is not None:
                expect(f"{base}: two hosts over TCP give one process's logits bit for bit", two == one, "")
                expect(f"{base}: two hosts over TCP give one process's greedy tokens", tokens == one_tokens,
                       f"{tokens} vs {one_tokens}")
        with tempfile.TemporaryDirectory(prefix="brasa-pipe-cache-") as cache:
            p = subprocess.run([*launcher, a.brasa, "bench", "-m", models[0], "-p", "64", "-n", "8", "-r", "1", "-t", "1",
                                "--json"], capture_output=True, text=True, timeout=600, env=dict(env(), BRASA_CACHE_DIR=cache))
        try:
            doc = json.loads(p.stdout)
            link = doc["pipeline"]["link_round_trip_seconds"]
            expect("bench over two hosts reports the link", link["one_row"] > 0, str(link))
            speeds = ", ".join(f"{r['test']} {r['tokens_per_second']['mean']:.1f} tokens/s" for r in doc["results"])
            print(f"two hosts: bench {speeds}; link round trip {link['one_row'] * 1e6:.0f} us a row, "
                  f"{link['rows_of_64'] * 1e3:.2f} ms 64 rows")
        except (ValueError, KeyError) as e:
            expect("bench over two hosts", False, f"{e}: {p.stdout[-400:]} {p.stderr[-400:]}")
    finally:
        for ns, _, _ in hosts:
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--brasa", required=True)
    ap.add_argument("--logits-dump", required=True)
    ap.add_argument("--model", action="append", required=True)
    ap.add_argument("--quick", action="store_true")
    a = ap.parse_args()
    models = [m for m in a.model if os.path.exists(m)]
    if len(models) < 2:
        print("skipped: models missing")
        return 77
    if not shutil.which("mpirun"):
        print("skipped: no mpirun (Debian: apt-get install openmpi-bin)")
        return 77
    probe = run([*mpirun(2), a.brasa, "--version"], timeout=120)
    if "built without MPI" in probe.stderr:
        print("skipped: this brasa was built without MPI")
        return 77
    if not expect("brasa --version under mpirun", probe.returncode == 0, probe.stderr[-400:]):
        return CHECKS.finish()
    with tempfile.TemporaryDirectory(prefix="brasa-pipeline-") as work:
        if a.quick:
            check_logits(a, models[0], work, counts=(2,))
            check_run_and_bench(a, models[0])
            check_server(a, models[0], work)
            check_mismatch(a, models)
            return CHECKS.finish()
        for m in models:
            check_logits(a, m, work)
        check_run_and_bench(a, models[0])
        check_fit_measured(a, models[-1])
        check_server(a, models[-1], work)
        check_mismatch(a, models)
        check_two_hosts(a, models, work)
    return CHECKS.finish()


if __name__ == "__main__":
    sys.exit(main())
