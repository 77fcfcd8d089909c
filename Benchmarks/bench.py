#!/usr/bin/env python3
"""Runs the download scenarios for Haul and its peers and prints one markdown table.

Each measurement runs the tool under GNU time (wall, user+sys CPU, peak RSS), checks the output's SHA-256,
and deletes it. Tools are interleaved (A B C A B C ...) and medians of the rounds are reported, because
these machines are shared and noisy.
"""
import argparse, hashlib, os, shutil, signal, socket, statistics, subprocess, sys, tempfile, time

MiB = 1 << 20


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(4 * MiB), b""):
            h.update(block)
    return h.hexdigest()


def make_file(path, size, seed):
    block = hashlib.sha256(str(seed).encode()).digest() * (MiB // 32)
    with open(path, "wb") as f:
        written = 0
        counter = 0
        while written < size:
            chunk = bytes([counter & 0xFF]) + block[1:]
            f.write(chunk[: size - written])
            written += len(chunk)
            counter += 1


class Nginx:
    def __init__(self, root, data):
        self.root = root
        self.http = free_port()
        self.https = free_port()
        ca_key, ca_pem = f"{root}/ca.key", f"{root}/ca.pem"
        key, csr, pem = f"{root}/server.key", f"{root}/server.csr", f"{root}/server.pem"
        run = lambda *a: subprocess.run(a, check=True, capture_output=True)
        run("openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", ca_key, "-out", ca_pem,
            "-days", "2", "-subj", "/CN=haul bench CA")
        run("openssl", "req", "-newkey", "rsa:2048", "-nodes", "-keyout", key, "-out", csr, "-subj", "/CN=localhost")
        with open(f"{root}/san.ext", "w") as f:
            f.write("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
        run("openssl", "x509", "-req", "-in", csr, "-CA", ca_pem, "-CAkey", ca_key, "-CAcreateserial",
            "-out", pem, "-days", "2", "-extfile", f"{root}/san.ext")
        self.ca = ca_pem
        user = "user root;" if os.geteuid() == 0 else ""
        conf = f"""
daemon off; worker_processes 1; {user}
error_log {root}/error.log; pid {root}/nginx.pid;
events {{ worker_connections 1024; }}
http {{
  access_log off; sendfile on; tcp_nopush on; keepalive_requests 100000;
  client_body_temp_path {root}/t1; proxy_temp_path {root}/t2; fastcgi_temp_path {root}/t3;
  uwsgi_temp_path {root}/t4; scgi_temp_path {root}/t5;
  server {{
    listen 127.0.0.1:{self.http}; listen 127.0.0.1:{self.https} ssl;
    ssl_certificate {pem}; ssl_certificate_key {key};
    root {data};
    location /limited/ {{ alias {data}/; limit_rate 20m; }}
  }}
}}
"""
        with open(f"{root}/nginx.conf", "w") as f:
            f.write(conf)
        self.process = subprocess.Popen(["nginx", "-c", f"{root}/nginx.conf", "-p", root],
                                        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for port in (self.http, self.https):
            for _ in range(100):
                try:
                    socket.create_connection(("127.0.0.1", port), timeout=0.1).close()
                    break
                except OSError:
                    time.sleep(0.05)

    def url(self, path, tls=False):
        return f"https://localhost:{self.https}{path}" if tls else f"http://127.0.0.1:{self.http}{path}"

    def stop(self):
        self.process.send_signal(signal.SIGQUIT)
        try:
            self.process.wait(5)
        except subprocess.TimeoutExpired:
            self.process.kill()


def measure(command, output, expected_sha):
    if output and os.path.exists(output):
        os.remove(output)
    for leftover in (output + ".part", output + ".aria2", output + ".st") if output else ():
        if os.path.exists(leftover):
            os.remove(leftover)
    timing = tempfile.mktemp()
    start = time.monotonic()
    result = subprocess.run(["/usr/bin/time", "-o", timing, "-f", "%U %S %M"] + command,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    wall = time.monotonic() - start
    user, system, rss = open(timing).read().split()[-3:]
    os.remove(timing)
    if result.returncode != 0:
        raise RuntimeError(f"{command[0]} failed ({result.returncode}): {result.stderr.decode()[-400:]}")
    if expected_sha and output:
        actual = sha256(output)
        if actual != expected_sha:
            raise RuntimeError(f"{' '.join(command)}: SHA-256 mismatch")
        os.remove(output)
    return wall, float(user) + float(system), int(rss) / 1024


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--haul", required=True)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--scenarios", default="a,b,c")
    parser.add_argument("--size-mib", type=int, default=1024)
    args = parser.parse_args()
    scenarios = set(args.scenarios.split(","))

    work = tempfile.mkdtemp(prefix="haul-bench-")
    data, out = f"{work}/data", f"{work}/out"
    os.makedirs(data); os.makedirs(out)
    big, limited = args.size_mib * MiB, 128 * MiB
    make_file(f"{data}/big.bin", big, 1)
    make_file(f"{data}/limited.bin", limited, 2)
    sums = {"big": sha256(f"{data}/big.bin"), "limited": sha256(f"{data}/limited.bin")}
    nginx = Nginx(work, data)
    haul = args.haul
    o = f"{out}/file"
    rows = []
    try:
        def scenario(name, size, tools, reference=None):
            results = {label: [] for label, _ in tools}
            failures = {}
            for _ in range(args.rounds):
                for label, (command, output, digest) in tools:
                    try:
                        results[label].append(measure(command, output, digest))
                    except RuntimeError as error:
                        # A peer that crashes (axel does, now and then) is reported, not fatal.
                        failures[label] = failures.get(label, 0) + 1
                        print(f"{name}: {error}", file=sys.stderr)
            peers = [l for l, _ in tools if not l.startswith("haul") and l not in (reference or [])]
            table = []
            for label, count in failures.items():
                rows.append((name, f"{label} (failed {count} of {args.rounds} runs)", float("nan"), float("nan"), float("nan"), float("nan"), ""))
            for label, samples in results.items():
                if not samples:
                    continue
                wall = statistics.median(s[0] for s in samples)
                cpu = statistics.median(s[1] for s in samples)
                rss = max(s[2] for s in samples)
                table.append((label, wall, size / wall / 1e6, cpu / (size / 2**30), rss))
            best_peer = min((t[1] for t in table if t[0] in peers), default=None)
            peers = [p for p in peers if results[p]]
            for label, wall, rate, cpu, rss in table:
                ratio = f"{best_peer / wall:.2f}x" if best_peer and label.startswith("haul") else ""
                rows.append((name, label, wall, rate, cpu, rss, ratio))

        if "a" in scenarios:
            url = nginx.url("/big.bin")
            d = ("big.bin", sums["big"])
            scenario(f"(a) {args.size_mib} MiB HTTP", big, [
                ("haul -c1 --no-sync", ([haul, "-q", "-c", "1", "--no-sync", url, "-o", o], o, sums["big"])),
                ("haul -c8 --no-sync", ([haul, "-q", "-c", "8", "--no-sync", url, "-o", o], o, sums["big"])),
                ("haul -c8 (durable)", ([haul, "-q", "-c", "8", url, "-o", o], o, sums["big"])),
                ("curl -o FILE", (["curl", "-s", "-o", o, url], o, sums["big"])),
                ("wget -O", (["wget", "-q", "-O", o, url], o, sums["big"])),
                ("aria2c -x1", (["aria2c", "-q", "-x1", "-s1", "--file-allocation=falloc", "-d", out, "-o", "file", url], o, sums["big"])),
                ("aria2c -x8", (["aria2c", "-q", "-x8", "-s8", "-k1M", "--file-allocation=falloc", "-d", out, "-o", "file", url], o, sums["big"])),
                ("aria2c -x16", (["aria2c", "-q", "-x16", "-s16", "-k1M", "--file-allocation=falloc", "-d", out, "-o", "file", url], o, sums["big"])),
                ("axel -n 8", (["axel", "-q", "-n", "8", "-o", o, url], o, sums["big"])),
                ("curl -o /dev/null (reference)", (["curl", "-s", "-o", "/dev/null", url], None, None)),
                ("dd bs=1M conv=fdatasync (reference)", (["dd", f"if={data}/big.bin", f"of={o}", "bs=1M", "conv=fdatasync", "status=none"], o, sums["big"])),
            ], reference=["curl -o /dev/null (reference)", "dd bs=1M conv=fdatasync (reference)"])
        if "b" in scenarios:
            url = nginx.url("/big.bin", tls=True)
            scenario(f"(b) {args.size_mib} MiB HTTPS", big, [
                ("haul -c1 --no-sync", ([haul, "-q", "-c", "1", "--no-sync", "--cacert", nginx.ca, url, "-o", o], o, sums["big"])),
                ("haul -c8 --no-sync", ([haul, "-q", "-c", "8", "--no-sync", "--cacert", nginx.ca, url, "-o", o], o, sums["big"])),
                ("curl -o FILE", (["curl", "-s", "--cacert", nginx.ca, "-o", o, url], o, sums["big"])),
                ("wget -O", (["wget", "-q", "--ca-certificate", nginx.ca, "-O", o, url], o, sums["big"])),
                ("aria2c -x8", (["aria2c", "-q", "-x8", "-s8", "-k1M", "--ca-certificate", nginx.ca, "--file-allocation=falloc", "-d", out, "-o", "file", url], o, sums["big"])),
            ])
        if "c" in scenarios:
            url = nginx.url("/limited/limited.bin")
            tools = []
            for n in (8, 16):
                tools += [
                    (f"haul -c{n} --no-sync", ([haul, "-q", "-c", str(n), "--no-sync", url, "-o", o], o, sums["limited"])),
                    (f"aria2c -x{n} -s{n} -k1M", (["aria2c", "-q", f"-x{n}", f"-s{n}", "-k1M", "--file-allocation=falloc", "-d", out, "-o", "file", url], o, sums["limited"])),
                    (f"axel -n {n}", (["axel", "-q", "-n", str(n), "-o", o, url], o, sums["limited"])),
                ]
            scenario("(c) 128 MiB, limit_rate 20m/conn", limited, tools)
    finally:
        nginx.stop()
        shutil.rmtree(work, ignore_errors=True)

    print(f"\nMachine: {os.cpu_count()} cores, {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') // 2**30} GiB; "
          f"{args.rounds} rounds, medians; peak RSS is the largest seen.\n")
    print("| scenario | tool | median wall s | MB/s | CPU s/GiB | peak RSS MiB | Haul vs best peer |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name, label, wall, rate, cpu, rss, ratio in rows:
        extra = ""
        if name.startswith("(c)") and rate == rate:
            n = int(label.split("-c")[-1].split()[0]) if label.startswith("haul") else int(label.split()[1].lstrip("-x").split()[0]) if label.startswith("aria2c") else int(label.split()[-1])
            extra = f" ({rate * 1e6 / (n * 20 * MiB) * 100:.0f}% of {n}x20 MiB/s)"
        print(f"| {name} | {label} | {wall:.3f} | {rate:.0f}{extra} | {cpu:.2f} | {rss:.1f} | {ratio} |")


if __name__ == "__main__":
    main()
