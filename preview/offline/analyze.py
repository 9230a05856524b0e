"""The policy pack, run as the Pulumi CLI runs it, over a recording.

The pack is never re-implemented here. Two ways to reach it, with the same calls:
- in process (the default): the servicer that `policy/__main__.py` builds (pulumi_policy's own
  `PolicyPack` constructor runs; only the start of its gRPC server is left out), called directly;
- as a subprocess (`--analyzer grpc`): `python -u -m pulumi.policy <engine> <pack dir>`, the command
  the Python language host runs for a policy pack (pulumi/pulumi v3.259.0,
  sdk/python/cmd/pulumi-language-python/main.go:1608-1618), over its gRPC Analyzer service.

Either way the engine's half is preview/offline/requests.py (what Analyze and AnalyzeStack receive) and
preview/offline/policy_config.py (what Configure receives), and the diagnostics are read back as the engine
reads them: a resource policy's diagnostic belongs to the analyzed resource, a stack policy's to the
resource it names or else the root stack (pkg/resource/deploy/analyze_snapshot.go:40-101,
step_generator.go:3548-3553).
"""

from __future__ import annotations

import contextlib
import runpy
import selectors
import subprocess
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from pulumi.runtime.proto import analyzer_pb2

from preview.offline import collector, policy_config, requests
from preview.offline.engine import ROOT, Recording

POLICY_DIR = ROOT / "policy"
# The pack logs to the engine at this address; none listens offline, which only loses log lines.
ENGINE_ADDRESS = "127.0.0.1:1"
_START_SECONDS = 60
_UNDECIDED = "can't run policy"
_MAX_MESSAGE = 400 * 1024 * 1024  # the pack's own gRPC limit (pulumi_policy/policy.py)


class PackError(Exception):
    """The pack could not be started or answered with an error: an internal failure (exit 3)."""


@dataclass(frozen=True)
class Violation:
    policy: str
    enforcement_level: str
    urn: str
    message: str
    # The analyzer's "can't run policy ... during preview": a value the policy reads is unknown.
    undecided: bool = False
    fix: str = ""  # the policy's remediation steps: what to change

    def as_dict(self) -> dict[str, Any]:
        found = {
            "policy": self.policy,
            "enforcementLevel": self.enforcement_level,
            "urn": self.urn,
            "message": self.message,
        }
        if self.fix:
            found["fix"] = self.fix
        if self.undecided:
            found["undecided"] = True
        return found


class Pack(Protocol):
    def GetAnalyzerInfo(self, request) -> analyzer_pb2.AnalyzerInfo: ...  # noqa: N802
    def Configure(self, request) -> Any: ...  # noqa: N802
    def Analyze(self, request) -> analyzer_pb2.AnalyzeResponse: ...  # noqa: N802
    def AnalyzeStack(self, request) -> analyzer_pb2.AnalyzeResponse: ...  # noqa: N802


class _Built(Exception):
    def __init__(self, servicer: Any) -> None:
        super().__init__()
        self.servicer = servicer


class InProcessPack:
    """The servicer `policy/__main__.py` builds, called without gRPC in between."""

    def __init__(self, pack_dir: Path = POLICY_DIR) -> None:
        import pulumi_policy.policy as policy_module

        grpc_module = policy_module.analyzer_pb2_grpc
        real = grpc_module.add_AnalyzerServicer_to_server

        def hand_over(servicer, _server):
            raise _Built(servicer)

        # PolicyPack builds its servicer, then registers it with a gRPC server it starts and never
        # leaves: stop it right there and keep the servicer.
        grpc_module.add_AnalyzerServicer_to_server = hand_over
        saved_path = list(sys.path)
        try:
            runpy.run_path(str(pack_dir / "__main__.py"), run_name="__main__")
        except _Built as built:
            self._servicer = built.servicer
        else:
            raise PackError(f"{pack_dir / '__main__.py'} did not build a PolicyPack")
        finally:
            grpc_module.add_AnalyzerServicer_to_server = real
            sys.path[:] = saved_path

    def GetAnalyzerInfo(self, request):  # noqa: N802 (the gRPC method names)
        return self._servicer.GetAnalyzerInfo(request, None)

    def Configure(self, request):  # noqa: N802
        return self._servicer.Configure(request, None)

    def Analyze(self, request):  # noqa: N802
        with _converting_once():
            return self._servicer.Analyze(request, None)

    def AnalyzeStack(self, request):  # noqa: N802
        with _converting_once():
            return self._servicer.AnalyzeStack(request, None)


class _ConvertOnce:
    """Stands in for `json_format` in pulumi_policy's servicer module during one call, with a
    MessageToDict that converts each message once."""

    def __init__(self, real) -> None:
        self._real = real
        self._done: dict[int, tuple[Any, Any]] = {}  # id -> (the message, kept alive so no id is reused; its dict)

    def MessageToDict(self, message, *args, **kwargs):  # noqa: N802 (json_format's name)
        if args or kwargs:
            return self._real.MessageToDict(message, *args, **kwargs)
        if id(message) not in self._done:
            self._done[id(message)] = (message, self._real.MessageToDict(message))
        return self._done[id(message)][1]

    def __getattr__(self, name: str):
        return getattr(self._real, name)


@contextlib.contextmanager
def _converting_once() -> Iterator[None]:
    """pulumi_policy 1.21.0 converts a resource's properties for every policy it runs (policy.py:997,
    1049, 1410: MessageToDict, then deserialize_properties, inside the loop over the policies), so a
    stack of 120 resources is converted some 4,000 times per call, most of the pack's time. Both are
    pure functions of the message. So is unknown_checking_proxy (policy.py:998, 1050, 1411), which
    copies every dict and list into read-only proxies (proxy.py:129-145): the one way to change one is
    a dict proxy's __setitem__ (proxy.py:108-109), which would let one policy's write reach the next.
    Our policies only read; during the call that __setitem__ raises, so a policy that writes fails
    here (every stack is analysed offline in the tests) instead of passing its write on. Within one
    call each message is converted and proxied once."""
    import pulumi_policy.policy as servicer
    import pulumi_policy.proxy as proxies

    real_format, real_deserialize = servicer.json_format, servicer.deserialize_properties
    real_proxy, real_setitem = servicer.unknown_checking_proxy, proxies._DictProxy.__setitem__
    done: dict[tuple[int, bool], tuple[Any, Any]] = {}
    proxied: dict[int, tuple[Any, Any]] = {}

    def deserialize(props, proxy_secrets: bool = False):
        key = (id(props), proxy_secrets)
        if key not in done:
            done[key] = (props, real_deserialize(props, proxy_secrets))
        return done[key][1]

    def proxy(props):
        if id(props) not in proxied:
            proxied[id(props)] = (props, real_proxy(props))
        return proxied[id(props)][1]

    def read_only(self, key, value):
        raise TypeError(f"a policy wrote {key!r} into a resource's properties: policies only read them")

    servicer.json_format, servicer.deserialize_properties = _ConvertOnce(real_format), deserialize
    servicer.unknown_checking_proxy, proxies._DictProxy.__setitem__ = proxy, read_only
    try:
        yield
    finally:
        servicer.json_format, servicer.deserialize_properties = real_format, real_deserialize
        servicer.unknown_checking_proxy, proxies._DictProxy.__setitem__ = real_proxy, real_setitem


class PackProcess:
    """The pack started as the CLI starts it, reached over gRPC. Use as a context manager."""

    def __init__(self, python: str = sys.executable, pack_dir: Path = POLICY_DIR) -> None:
        import grpc
        from pulumi.runtime.proto import analyzer_pb2_grpc

        self._pack_dir = pack_dir
        self._process = subprocess.Popen(
            [python, "-u", "-m", "pulumi.policy", ENGINE_ADDRESS, str(pack_dir)],
            cwd=pack_dir,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        try:
            port = self._read_port()
        except BaseException:
            # Interrupted while the pack starts (SIGTERM, Ctrl-C): the caller never gets this object
            # to close, so the subprocess goes now.
            if self._process.poll() is None:
                self._process.kill()
            self._process.wait()
            raise
        self._channel = grpc.insecure_channel(
            f"127.0.0.1:{port}",
            options=[("grpc.max_receive_message_length", _MAX_MESSAGE), ("grpc.max_send_message_length", _MAX_MESSAGE)],
        )
        self._stub = analyzer_pb2_grpc.AnalyzerStub(self._channel)
        self._grpc = grpc

    def _read_port(self) -> int:
        with selectors.DefaultSelector() as selector:
            selector.register(self._process.stdout, selectors.EVENT_READ)
            ready = selector.select(timeout=_START_SECONDS)
        line = self._process.stdout.readline().decode(errors="replace").strip() if ready else ""
        if not line.isdigit():
            if self._process.poll() is None:
                self._process.kill()
            error = self._process.stderr.read().decode(errors="replace")[-2000:]
            self.close()
            raise PackError(
                f"the policy pack did not start (python -m pulumi.policy {ENGINE_ADDRESS} {self._pack_dir}): "
                f"{line or 'no port within ' + str(_START_SECONDS) + ' s'}\n{error}".rstrip()
            )
        return int(line)

    def _call(self, method: str, request):
        try:
            return getattr(self._stub, method)(request)
        except self._grpc.RpcError as exc:
            raise PackError(f"the policy pack failed in {method}: {exc.details()}") from None

    def GetAnalyzerInfo(self, request):  # noqa: N802
        return self._call("GetAnalyzerInfo", request)

    def Configure(self, request):  # noqa: N802
        return self._call("Configure", request)

    def Analyze(self, request):  # noqa: N802
        return self._call("Analyze", request)

    def AnalyzeStack(self, request):  # noqa: N802
        return self._call("AnalyzeStack", request)

    def close(self) -> None:
        if getattr(self, "_channel", None) is not None:
            self._channel.close()
            self._channel = None
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()
        for stream in (self._process.stdout, self._process.stderr):
            stream.close()

    def __enter__(self) -> PackProcess:
        return self

    def __exit__(self, *_exc) -> None:
        self.close()


_IN_PROCESS: InProcessPack | None = None


def in_process() -> InProcessPack:
    """One in-process pack per process: building it runs policy/__main__.py once."""
    global _IN_PROCESS
    if _IN_PROCESS is None:
        _IN_PROCESS = InProcessPack()
    return _IN_PROCESS


def info(pack: Pack) -> analyzer_pb2.AnalyzerInfo:
    return pack.GetAnalyzerInfo(_empty())


def _empty():
    from google.protobuf import empty_pb2

    return empty_pb2.Empty()


def policy_names(pack: Pack) -> list[str]:
    return [p.name for p in info(pack).policies]


def message(diagnostic: analyzer_pb2.AnalyzeDiagnostic) -> str:
    # The servicer prefixes the policy's description and a newline (pulumi_policy/policy.py,
    # _create_report_violation); the report keeps the part the policy wrote.
    prefix = diagnostic.description + "\n"
    text = diagnostic.message
    return text[len(prefix) :] if diagnostic.description and text.startswith(prefix) else text


def _violations(response: analyzer_pb2.AnalyzeResponse, attribute, fixes: Mapping[str, str]) -> list[Violation]:
    return [
        Violation(
            policy=d.policyName,
            enforcement_level=policy_config.FROM_PROTO[d.enforcementLevel],
            urn=attribute(d.urn),
            message=message(d),
            undecided=d.message.startswith(_UNDECIDED),
            fix=fixes.get(d.policyName, ""),
        )
        for d in response.diagnostics
    ]


def analyze(
    recording: Recording, pack: Pack | None = None, config: Mapping[str, policy_config.PolicyConfig] | None = None
) -> list[Violation]:
    """Configure the pack, Analyze every resource, AnalyzeStack once; every diagnostic, sorted."""
    pack = pack or in_process()
    described = info(pack)
    fixes = {p.name: p.remediation_steps for p in described.policies}
    pack.Configure(policy_config.configure_request(described, config or {}))
    found: list[Violation] = []
    with collector.held():
        for request in requests.analyze_requests(recording):
            found += _violations(pack.Analyze(request), lambda _urn, own=request.urn: own, fixes)
        stack = requests.analyze_stack_request(recording)
        known = {r.urn for r in stack.resources}
        found += _violations(pack.AnalyzeStack(stack), lambda urn: urn if urn in known else recording.stack_urn, fixes)
    return sorted(set(found), key=lambda v: (v.policy, v.urn, v.message))
