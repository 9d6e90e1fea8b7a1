"""serverproc.py: starting and stopping a real `brasa serve` for the server tests: a free port
chosen by the server itself (--port 0, read from its first line), a private runtime directory for
the device lock, and the server's stderr kept for the sanitizer checks."""
import os
import re
import signal
import subprocess
import tempfile
import time


class Server:
    def __init__(self, brasa, model, *args, runtime_dir=None, env=None):
        self.runtime_dir = runtime_dir or tempfile.mkdtemp(prefix="brasa-run-")
        e = dict(os.environ, XDG_RUNTIME_DIR=self.runtime_dir)
        e.setdefault("ASAN_OPTIONS", "detect_leaks=1:abort_on_error=0")
        if env:
            e.update(env)
        self.log = tempfile.TemporaryFile()
        model_args = ["-m", model] if model else []  # None: the models come from the arguments
        self.proc = subprocess.Popen([brasa, "serve", *model_args, "--port", "0", *args],
                                     stdout=subprocess.DEVNULL, stderr=self.log, env=e)
        self.port = None
        deadline = time.time() + 120
        while time.time() < deadline and self.proc.poll() is None:
            m = re.search(rb"listening on http://[^:]+:(\d+)/", self.stderr_bytes())
            if m:
                self.port = int(m.group(1))
                break
            time.sleep(0.1)
        self.base = f"http://127.0.0.1:{self.port}"

    def stderr_bytes(self):
        self.log.seek(0)
        return self.log.read()

    def stderr(self):
        return self.stderr_bytes().decode("utf-8", "replace")

    def stop(self, sig=signal.SIGTERM, timeout=120):
        """Signals the server and returns its exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        try:
            return self.proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            return self.proc.wait()
