"""gRPC's weighted_round_robin (PyPI's grpcio, gRPC's C core) over instances of the tonic
example: a client nobody here wrote, balancing by the ORCA reports the instances send.

Run by tests/it/orca.rs (and benches/orca.rs) with the Python of a virtual environment that
has grpcio (`.ci/run` makes it). It keeps `--concurrency` calls of greeter.v1.Greeter/SayHello
in flight through one channel over `--target` (`ipv4:a,b`), with the service config of
`--policy` (`wrr`: per-call reports, `wrr-oob`: the out-of-band stream, `round_robin`), and
answers commands read from stdin, one a line, each with one JSON line on stdout:

- `measure <seconds>`: over the next seconds, the calls each server answered, their
  latencies' p50/p90/p99 (ms), and the share of calls each server is predicted to get from
  the reports it sent meanwhile: every 100 ms, each server's latest report weighs it
  `rps_fractional / (application_utilization + eps / rps_fractional * penalty)` (gRFC A58;
  0 without a report), the shares of those weights are averaged over the window. A server
  with no weight takes the mean of the others' (A58's rule), so with fewer than two weighted
  servers the prediction is even. The reports are read from streams of this script's own
  to each server's `OpenRcaService`, one report a second: gRPC's C core keeps the per-call
  trailer (`endpoint-load-metrics-bin`) to itself, and the stream's figures are the same
  estimate, read at most a sample (100 ms) apart.
- `quit`.

The messages are encoded by hand (a few fields): no generated code, no grpcio-tools.
"""

import argparse
import asyncio
import json
import struct
import sys
import time

import grpc

PENALTY = 1.0
CONFIGS = {
    "wrr": {
        "weighted_round_robin": {
            "blackoutPeriod": "0s",
            "weightUpdatePeriod": "0.1s",
            "weightExpirationPeriod": "2s",
            "errorUtilizationPenalty": PENALTY,
        }
    },
    "wrr-oob": {
        "weighted_round_robin": {
            "enableOobLoadReport": True,
            "oobReportingPeriod": "1s",
            "blackoutPeriod": "0s",
            "weightUpdatePeriod": "0.1s",
            "weightExpirationPeriod": "2s",
            "errorUtilizationPenalty": PENALTY,
        }
    },
    "round_robin": {"round_robin": {}},
}


def varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def fields(data):
    """(field number, wire type, value) of a protobuf message: ints, bytes, doubles."""
    i = 0
    while i < len(data):
        key, i = read_varint(data, i)
        number, wire = key >> 3, key & 7
        if wire == 0:
            value, i = read_varint(data, i)
        elif wire == 1:
            value = struct.unpack("<d", data[i : i + 8])[0]
            i += 8
        elif wire == 2:
            length, i = read_varint(data, i)
            value = data[i : i + length]
            i += length
        elif wire == 5:
            value = data[i : i + 4]
            i += 4
        else:
            raise ValueError(f"wire type {wire}")
        yield number, wire, value


def read_varint(data, i):
    shift = value = 0
    while True:
        byte = data[i]
        i += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, i
        shift += 7


def hello_request(name):
    encoded = name.encode()
    return b"\x0a" + varint(len(encoded)) + encoded


def reply_server(data):
    for number, _, value in fields(data):
        if number == 2:
            return value.decode()
    return "?"


def orca_report(data):
    """The figures a weighted round robin reads from an OrcaLoadReport."""
    names = {6: "rps", 7: "eps", 9: "utilization", 1: "cpu"}
    report = {"rps": 0.0, "eps": 0.0, "utilization": 0.0, "cpu": 0.0}
    for number, wire, value in fields(data):
        if number in names and wire == 1:
            report[names[number]] = value
    return report


def report_request(seconds):
    duration = b"\x08" + varint(seconds)
    return b"\x0a" + varint(len(duration)) + duration


def weight(report):
    if report is None:
        return 0.0
    utilization = report["utilization"] if report["utilization"] > 0 else report["cpu"]
    rps = report["rps"]
    if rps <= 0 or utilization <= 0:
        return 0.0
    return rps / (utilization + report["eps"] / rps * PENALTY)


def shares(weights):
    weighted = [w for w in weights.values() if w > 0]
    if len(weighted) < 2:
        return {server: 1 / len(weights) for server in weights}
    mean = sum(weighted) / len(weighted)
    filled = {server: (w if w > 0 else mean) for server, w in weights.items()}
    total = sum(filled.values())
    return {server: w / total for server, w in filled.items()}


def percentile(values, fraction):
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


class Client:
    def __init__(self, args):
        self.args = args
        self.servers = args.target.removeprefix("ipv4:").split(",")
        config = {"loadBalancingConfig": [CONFIGS[args.policy]]}
        options = [
            ("grpc.service_config", json.dumps(config)),
            # The target's two addresses are no authority a server takes.
            ("grpc.default_authority", "localhost"),
        ]
        self.channel = grpc.aio.insecure_channel(args.target, options=options)
        self.say_hello = self.channel.unary_unary("/greeter.v1.Greeter/SayHello")
        self.latest = {server: None for server in self.servers}
        self.window = None
        self.failures = 0

    async def caller(self):
        request = hello_request("wrr")
        while True:
            started = time.monotonic()
            try:
                reply = await self.say_hello(request, timeout=10)
            except grpc.aio.AioRpcError:
                self.failures += 1
                await asyncio.sleep(0.01)
                continue
            if self.window is not None:
                server = reply_server(reply)
                self.window["calls"][server] = self.window["calls"].get(server, 0) + 1
                self.window["latencies"].append((time.monotonic() - started) * 1000)

    async def out_of_band(self, server):
        """This script's own stream of reports from `server`, restarted when it ends."""
        while True:
            channel = grpc.aio.insecure_channel(server)
            stream = channel.unary_stream("/xds.service.orca.v3.OpenRcaService/StreamCoreMetrics")
            try:
                async for report in stream(report_request(1)):
                    self.latest[server] = orca_report(report)
            except grpc.aio.AioRpcError:
                pass
            self.latest[server] = None
            await channel.close()
            await asyncio.sleep(0.5)

    async def measure(self, seconds):
        self.window = {"calls": {}, "latencies": []}
        predicted = {server: 0.0 for server in self.servers}
        samples = 0
        reports = {server: [] for server in self.servers}
        failures = self.failures
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            await asyncio.sleep(0.1)
            weights = {server: weight(report) for server, report in self.latest.items()}
            for server, share in shares(weights).items():
                predicted[server] += share
            for server, report in self.latest.items():
                if report is not None:
                    reports[server].append(report)
            samples += 1
        window, self.window = self.window, None
        total = sum(window["calls"].values())
        mean = lambda values, key: sum(r[key] for r in values) / len(values) if values else None
        latencies = window["latencies"]
        return {
            "calls": window["calls"],
            "total": total,
            "failures": self.failures - failures,
            "observed": {s: window["calls"].get(s, 0) / total if total else 0 for s in self.servers},
            "predicted": {s: predicted[s] / samples for s in self.servers},
            "reports": {
                s: {k: mean(reports[s], k) for k in ("utilization", "rps", "eps")}
                for s in self.servers
            },
            "calls_per_second": total / seconds,
            "p50_ms": percentile(latencies, 0.5),
            "p90_ms": percentile(latencies, 0.9),
            "p99_ms": percentile(latencies, 0.99),
        }


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--target", required=True)
    parser.add_argument("--policy", choices=sorted(CONFIGS), required=True)
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    client = Client(args)
    tasks = [asyncio.create_task(client.caller()) for _ in range(args.concurrency)]
    tasks += [asyncio.create_task(client.out_of_band(s)) for s in client.servers]
    loop = asyncio.get_running_loop()
    while True:
        line = await loop.run_in_executor(None, sys.stdin.readline)
        command = line.split()
        if not command or command[0] == "quit":
            break
        if command[0] == "measure":
            result = await client.measure(float(command[1]))
            print(json.dumps(result), flush=True)
    for task in tasks:
        task.cancel()
    await client.channel.close()


if __name__ == "__main__":
    asyncio.run(main())
