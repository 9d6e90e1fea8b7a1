"""checks.py: the pass/fail bookkeeping the Python tests share, ending in the closing line that
ctest logs and CI read ('NAME: N passed, M failed')."""


class Checks:
    def __init__(self, label):
        self.label = label
        self.passed = 0
        self.failed = 0

    def expect(self, name, ok, detail=""):
        """Counts one check; prints it with its detail when it fails. Returns ok."""
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print(f"FAIL {name}: {detail}")
        return ok

    def finish(self):
        """Prints the closing line and returns the exit status."""
        print(f"{self.label}: {self.passed} passed, {self.failed} failed")
        return 1 if self.failed else 0
