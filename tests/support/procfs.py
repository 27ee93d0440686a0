"""What /proc tells of a process, for tests that do not start a gateway
(sandgate_fixture needs a build dir; this module needs nothing)."""


def rss_kib(pid):
    """A process's resident memory (VmRSS), in KiB."""
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise AssertionError(f"no VmRSS for {pid}")
