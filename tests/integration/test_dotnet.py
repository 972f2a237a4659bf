"""polyprof and .NET processes: the fixture runtime (PyPI's dotnetcore2 3.1 with C# compiled by
mcs) and what polyprof does with its processes."""
import glob
import os

from conftest import wait_for


def _start_time(pid):
    with open(f"/proc/{pid}/stat") as f:
        return int(f.read().rsplit(")", 1)[1].split()[19])  # field 22: starttime


def test_dotnet_fixture_runs_jit_code_and_opens_its_diagnostics_socket(dotnet_app, start_app):
    """The test runtime works with no environment setting: the program prints ready from
    JIT-compiled code, maps libcoreclr.so, and listens on
    /tmp/dotnet-diagnostic-<pid>-<start time>-socket, owned by its user, mode 0600."""
    app = start_app(*dotnet_app)
    sock = f"/tmp/dotnet-diagnostic-{app.pid}-{_start_time(app.pid)}-socket"
    wait_for(lambda: os.path.exists(sock), 10, f"{sock} to appear")
    st = os.stat(sock)
    assert st.st_uid == os.getuid() and (st.st_mode & 0o777) == 0o600, oct(st.st_mode)
    with open(f"/proc/{app.pid}/maps") as f:
        assert "libcoreclr.so" in f.read()
    assert glob.glob(f"/tmp/dotnet-diagnostic-{app.pid}-*-socket") == [sock]
