#!/usr/bin/env python3
"""The language server's re-analysis after an edit, timed.

    scripts/bench-lsp.py BINARY CRATE_DIR FILE [EDITS] [--admit]

Starts `BINARY lsp` in CRATE_DIR (a crate with its Cargo.toml, inside a git
repository), opens FILE (relative to CRATE_DIR), then sends EDITS (default
15) whole-text changes, each adding a comment line, and times each from the
change to the diagnostics it publishes. Prints the open time and the
median, least and most of the edits. `--admit` appends a Redis lock call to
the text so the pre-filter lets the file through and it is parsed and
audited on every edit (a file that mentions no lock API is only scanned).
Measured in a benchmark, never in a test: time depends on the machine.
"""
import json
import os
import subprocess
import sys
import time

LOCK = (
    '\nfn __bench_lock(con: &mut redis::Connection) { let _: () = redis::cmd("SET")'
    '.arg("lock:bench").arg("1").arg("NX").arg("PX").arg(1000).query(con).unwrap(); }\n'
)


def main():
    args = [a for a in sys.argv[1:] if a != "--admit"]
    admit = "--admit" in sys.argv[1:]
    if len(args) < 3:
        sys.exit(__doc__)
    binary, root, rel = os.path.abspath(args[0]), args[1], args[2]
    edits = int(args[3]) if len(args) > 3 else 15
    server = subprocess.Popen(
        [binary, "lsp"],
        cwd=root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
    )

    def send(message):
        body = json.dumps(message).encode()
        server.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        server.stdin.flush()

    def receive():
        header = b""
        while not header.endswith(b"\r\n\r\n"):
            byte = server.stdout.read(1)
            if not byte:
                sys.exit("the server closed its output")
            header += byte
        length = next(
            int(line.split(b":")[1])
            for line in header.split(b"\r\n")
            if line.lower().startswith(b"content-length")
        )
        return json.loads(server.stdout.read(length))

    def diagnostics():
        while receive().get("method") != "textDocument/publishDiagnostics":
            pass

    path = os.path.abspath(os.path.join(root, rel))
    uri = "file://" + path
    with open(path, encoding="utf-8") as f:
        text = f.read() + (LOCK if admit else "")
    root_uri = "file://" + os.path.abspath(root)
    send({"jsonrpc": "2.0", "id": 1, "method": "initialize",
          "params": {"processId": None, "rootUri": root_uri, "capabilities": {}}})
    while receive().get("id") != 1:
        pass
    send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
    start = time.monotonic()
    send({"jsonrpc": "2.0", "method": "textDocument/didOpen",
          "params": {"textDocument": {"uri": uri, "languageId": "rust", "version": 1, "text": text}}})
    diagnostics()
    opened = time.monotonic() - start
    times = []
    for version in range(2, edits + 2):
        text += "\n// edit %d\n" % version
        start = time.monotonic()
        send({"jsonrpc": "2.0", "method": "textDocument/didChange",
              "params": {"textDocument": {"uri": uri, "version": version},
                         "contentChanges": [{"text": text}]}})
        diagnostics()
        times.append(time.monotonic() - start)
    times.sort()
    lines = text.count("\n")
    print("%s (%d lines%s): open %.0f ms; %d edits: median %.0f ms, least %.0f, most %.0f"
          % (rel, lines, ", admitted" if admit else "", opened * 1000, edits,
             times[len(times) // 2] * 1000, times[0] * 1000, times[-1] * 1000))
    send({"jsonrpc": "2.0", "id": 2, "method": "shutdown"})
    send({"jsonrpc": "2.0", "method": "exit"})
    server.stdin.close()
    server.wait(timeout=10)


if __name__ == "__main__":
    main()
