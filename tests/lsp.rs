//! The language server: a scripted editor in process over an in-memory
//! connection (diagnostics as `check` reports them, crate context, code
//! actions, configuration and pack changes), and the binary over stdio.

mod common;

use std::time::Duration;

use lockaudit::commands::lsp::{offset, serve, Options};
use lockaudit::source::SourceFile;
use lsp_server::{Connection, Message, Notification, Request, RequestId, Response};
use serde_json::{json, Value};

/// A scripted editor on one end of an in-memory connection.
struct Client {
    conn: Connection,
    next_id: i32,
}

impl Client {
    fn recv(&self) -> Message {
        // Only a guard against a hang: every message comes at once.
        self.conn
            .receiver
            .recv_timeout(Duration::from_secs(60))
            .expect("the server answers")
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = RequestId::from(self.next_id);
        let req = Request::new(id.clone(), method.into(), params);
        self.conn.sender.send(req.into()).unwrap();
        loop {
            match self.recv() {
                Message::Response(Response {
                    id: got,
                    response_result,
                }) if got == id => {
                    return response_result.unwrap_or_else(|e| panic!("{method}: {e:?}"));
                }
                Message::Notification(n) if n.method == "window/showMessage" => {}
                other => panic!("{method}: unexpected {other:?}"),
            }
        }
    }

    fn notify(&self, method: &str, params: Value) {
        let n = Notification::new(method.into(), params);
        self.conn.sender.send(n.into()).unwrap();
    }

    fn notification(&self, method: &str) -> Value {
        match self.recv() {
            Message::Notification(n) if n.method == method => n.params,
            other => panic!("expected {method}, got {other:?}"),
        }
    }

    fn diagnostics(&self) -> Vec<Value> {
        let p = self.notification("textDocument/publishDiagnostics");
        p["diagnostics"].as_array().unwrap().clone()
    }
}

/// Opens a document with `text` (version 1).
fn open(c: &Client, uri: &str, text: &str) {
    c.notify(
        "textDocument/didOpen",
        json!({ "textDocument": { "uri": uri, "languageId": "rust", "version": 1, "text": text } }),
    );
}

/// Sends the whole new text of a document.
fn replace_text(c: &Client, uri: &str, version: i32, text: &str) {
    c.notify(
        "textDocument/didChange",
        json!({
            "textDocument": { "uri": uri, "version": version },
            "contentChanges": [{ "text": text }],
        }),
    );
}

/// Applies an LSP workspace edit's text edits for `uri` to `text`.
fn apply(text: &str, edit: &Value, uri: &str) -> String {
    let src = SourceFile::new("", text);
    let mut edits: Vec<(usize, usize, String)> = edit["changes"][uri]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| {
            let pos = |p: &Value| offset(&src, serde_json::from_value(p.clone()).unwrap());
            (
                pos(&e["range"]["start"]),
                pos(&e["range"]["end"]),
                e["newText"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    edits.sort();
    let mut out = text.to_string();
    for (s, e, t) in edits.into_iter().rev() {
        out.replace_range(s..e, &t);
    }
    out
}

fn start() -> (Client, std::thread::JoinHandle<()>) {
    let (server, client) = Connection::memory();
    let handle = std::thread::spawn(move || {
        serve(server, Options::default()).map_err(|e| e.0).unwrap();
    });
    let mut c = Client {
        conn: client,
        next_id: 0,
    };
    let init = c.request("initialize", json!({ "capabilities": {} }));
    assert_eq!(init["serverInfo"]["name"], "lockaudit");
    // Incremental synchronisation: ranged edits.
    assert_eq!(init["capabilities"]["textDocumentSync"]["change"], 2);
    c.notify("initialized", json!({}));
    (c, handle)
}

fn stop(mut c: Client, handle: std::thread::JoinHandle<()>) {
    c.request("shutdown", Value::Null);
    c.notify("exit", Value::Null);
    handle.join().unwrap();
}

fn actions(c: &mut Client, uri: &str, diag: &Value) -> Vec<Value> {
    let r = c.request(
        "textDocument/codeAction",
        json!({
            "textDocument": { "uri": uri },
            "range": diag["range"],
            "context": { "diagnostics": [diag] },
        }),
    );
    r.as_array().unwrap().clone()
}

fn titled<'a>(actions: &'a [Value], start: &str) -> &'a Value {
    actions
        .iter()
        .find(|a| a["title"].as_str().unwrap().starts_with(start))
        .unwrap_or_else(|| panic!("no action `{start}…` in {actions:#?}"))
}

/// The editor judges a file as `check` does, knowing its
/// crate: the calls of another file's wrappers are lock sites there,
/// and the annotations on them attach.
#[test]
fn the_editor_knows_the_wrappers_of_the_crate() {
    let tmp = common::copy_project("wrapped");
    let path = tmp.path().join("src/jobs.rs");
    let text = std::fs::read_to_string(&path).unwrap();
    let uri = format!("file://{}", path.display());
    let (c, handle) = start();
    open(&c, &uri, &text);
    let mut got: Vec<(u64, String)> = c
        .diagnostics()
        .iter()
        .map(|d| {
            (
                d["range"]["start"]["line"].as_u64().unwrap() + 1,
                d["code"].as_str().unwrap().to_string(),
            )
        })
        .collect();
    got.sort();
    let mut want: Vec<(u64, String)> = common::markers::parse(&text)
        .unwrap()
        .into_iter()
        .map(|m| (m.line as u64, m.check.as_str().to_string()))
        .collect();
    want.sort();
    assert!(!want.is_empty());
    assert_eq!(got, want);
    stop(c, handle);
}

#[test]
fn annotating_from_a_code_action_clears_the_diagnostic() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lib.rs");
    let text = "pub fn take(con: &mut redis::Connection, k: &str, v: &str) -> bool {\n    let r: Option<String> = redis::cmd(\"SET\").arg(k).arg(v).arg(\"NX\").arg(\"PX\").arg(9).query(con).unwrap();\n    r.is_some()\n}\n";
    std::fs::write(
        &path,
        "// the saved text does not matter: the editor's does\n",
    )
    .unwrap();
    let uri = format!("file://{}", path.display());
    let (mut c, handle) = start();
    open(&c, &uri, text);
    let diags = c.diagnostics();
    assert_eq!(diags.len(), 1, "{diags:#?}");
    let d = &diags[0];
    assert_eq!(d["code"], "missing-purpose");
    assert_eq!(d["source"], "lockaudit");
    assert_eq!(d["severity"], 1);
    assert_eq!(d["range"]["start"], json!({ "line": 1, "character": 28 }));
    assert_eq!(
        d["codeDescription"]["href"],
        "https://github.com/lockaudit/lockaudit/blob/main/docs/src/checks/missing-purpose.md"
    );

    let acts = actions(&mut c, &uri, d);
    let titles: Vec<&str> = acts.iter().map(|a| a["title"].as_str().unwrap()).collect();
    assert_eq!(titles.len(), 4, "{titles:?}");
    titled(&acts, "Annotate as a correctness lock");
    let suppress = titled(&acts, "Suppress `missing-purpose`");
    let explain = titled(&acts, "Explain `missing-purpose`");
    assert_eq!(explain["command"]["command"], "lockaudit.explain");

    // The suppression names the check and asks for the reason.
    let suppressed = apply(text, &suppress["edit"], &uri);
    assert!(suppressed.contains(
        "{\n    // lockaudit: allow(missing-purpose) TODO: say why this is safe\n    let r"
    ));

    let annotate = titled(&acts, "Annotate as an efficiency lock");
    assert_eq!(annotate["kind"], "quickfix");
    let edited = apply(text, &annotate["edit"], &uri);
    assert!(
        edited.contains("{\n    // lock-purpose: efficiency — TODO: why\n    let r"),
        "{edited}"
    );
    replace_text(&c, &uri, 2, &edited);
    assert_eq!(
        c.diagnostics(),
        Vec::<Value>::new(),
        "the annotation satisfies the check"
    );

    // Back to the old text, then suppress instead: also silent.
    replace_text(&c, &uri, 3, &suppressed);
    assert_eq!(
        c.diagnostics(),
        Vec::<Value>::new(),
        "the suppression silences it"
    );
    // Saving publishes again, from the editor's text (the file on disk
    // has no lock at all).
    replace_text(&c, &uri, 4, text);
    assert_eq!(c.diagnostics().len(), 1);
    c.notify(
        "textDocument/didSave",
        json!({ "textDocument": { "uri": uri } }),
    );
    let saved = c.notification("textDocument/publishDiagnostics");
    assert_eq!(saved["version"], 4);
    assert_eq!(saved["diagnostics"][0]["code"], "missing-purpose");

    let page = c.request(
        "workspace/executeCommand",
        json!({ "command": "lockaudit.explain", "arguments": ["missing-purpose"] }),
    );
    assert!(
        page.as_str()
            .unwrap()
            .starts_with("# missing-purpose [error]"),
        "{page}"
    );

    c.notify(
        "textDocument/didClose",
        json!({ "textDocument": { "uri": uri } }),
    );
    assert_eq!(c.diagnostics(), Vec::<Value>::new());
    stop(c, handle);
}

#[test]
fn an_exact_fix_is_the_preferred_code_action() {
    let project = common::project("fixable");
    let path = project.join("src/lib.rs");
    let text = std::fs::read_to_string(&path).unwrap();
    let uri = format!("file://{}", path.display());
    let (mut c, handle) = start();
    open(&c, &uri, &text);
    let diags = c.diagnostics();
    let del = diags
        .iter()
        .find(|d| d["code"] == "unowned-release" && d["range"]["start"]["line"] == 19)
        .unwrap_or_else(|| panic!("{diags:#?}"));
    let acts = actions(&mut c, &uri, del);
    let fix = titled(&acts, "lockaudit: release the lock only while");
    assert_eq!(fix["isPreferred"], true);
    // No annotation is offered for a release.
    assert!(!acts
        .iter()
        .any(|a| a["title"].as_str().unwrap().starts_with("Annotate")));
    let fixed = apply(&text, &fix["edit"], &uri);
    replace_text(&c, &uri, 2, &fixed);
    let after = c.diagnostics();
    assert_eq!(after.len(), diags.len() - 1, "{after:#?}");
    assert!(!after
        .iter()
        .any(|d| d["code"] == "unowned-release" && d["range"]["start"]["line"] == 19));
    stop(c, handle);
}

/// The binary speaks the protocol on stdio, with Content-Length framing.
#[test]
fn the_binary_serves_on_stdio() {
    use std::io::{BufReader, Write};
    use std::process::{Command, Stdio};

    let mut child = Command::new(common::bin())
        .arg("lsp")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let send = |stdin: &mut std::process::ChildStdin, body: Value| {
        let text = body.to_string();
        write!(stdin, "Content-Length: {}\r\n\r\n{text}", text.len()).unwrap();
        stdin.flush().unwrap();
    };
    send(
        &mut stdin,
        json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": { "capabilities": {} } }),
    );
    let Some(Message::Response(r)) = Message::read(&mut stdout).unwrap() else {
        panic!("no initialize response")
    };
    assert_eq!(
        r.response_result.unwrap()["capabilities"]["codeActionProvider"]["codeActionKinds"][0],
        "quickfix"
    );
    send(
        &mut stdin,
        json!({ "jsonrpc": "2.0", "method": "initialized", "params": {} }),
    );
    let text = "fn f(con: &mut redis::Connection) { con.del(\"jobs:lock\").unwrap(); }\n";
    send(
        &mut stdin,
        json!({ "jsonrpc": "2.0", "method": "textDocument/didOpen", "params": { "textDocument": {
            "uri": "file:///nonexistent/src/lib.rs", "languageId": "rust", "version": 1, "text": text } } }),
    );
    let Some(Message::Notification(n)) = Message::read(&mut stdout).unwrap() else {
        panic!("no diagnostics")
    };
    assert_eq!(n.method, "textDocument/publishDiagnostics");
    assert_eq!(n.params["diagnostics"][0]["code"], "unowned-release");
    send(
        &mut stdin,
        json!({ "jsonrpc": "2.0", "id": 2, "method": "shutdown", "params": null }),
    );
    let Some(Message::Response(r)) = Message::read(&mut stdout).unwrap() else {
        panic!("no shutdown response")
    };
    assert_eq!(r.id, RequestId::from(2));
    send(
        &mut stdin,
        json!({ "jsonrpc": "2.0", "method": "exit", "params": null }),
    );
    drop(stdin);
    assert!(child.wait().unwrap().success());
}

/// The last line of a file with one `unowned-release` (a plain `del` of a
/// lock key), without the statement; the tests type it in.
const CLEAN: &str = "use redis::Commands;\nfn release(con: &mut redis::Connection) -> redis::RedisResult<()> {\n    let _s = \"🎉\"; \n    Ok(())\n}\n";

/// Ranged edits count UTF-16 units and apply in order, each to the text
/// the previous one left; a change without a range is the whole text.
#[test]
fn ranged_edits_apply_in_order_in_utf16_units() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lib.rs");
    std::fs::write(&path, "").unwrap();
    let uri = format!("file://{}", path.display());
    let (c, handle) = start();
    open(&c, &uri, CLEAN);
    assert!(c.diagnostics().is_empty());
    // Line 2 is `    let _s = "🎉"; `: the emoji is two UTF-16 units, so
    // the line ends at character 19, where the edits type the release.
    c.notify(
        "textDocument/didChange",
        json!({
            "textDocument": { "uri": uri, "version": 2 },
            "contentChanges": [
                { "range": { "start": { "line": 2, "character": 19 }, "end": { "line": 2, "character": 19 } },
                  "text": "let _: () = con.get(\"lock:job\")?;" },
                // The same place now holds `get`: make it a `del`.
                { "range": { "start": { "line": 2, "character": 35 }, "end": { "line": 2, "character": 38 } },
                  "text": "del" },
            ],
        }),
    );
    let diags = c.diagnostics();
    assert_eq!(diags.len(), 1, "{diags:#?}");
    assert_eq!(diags[0]["code"], "unowned-release");
    // `del` after the emoji: 35 UTF-16 units (34 characters, 37 bytes).
    assert_eq!(
        diags[0]["range"]["start"],
        json!({ "line": 2, "character": 35 })
    );
    replace_text(&c, &uri, 3, CLEAN);
    assert!(c.diagnostics().is_empty());
    stop(c, handle);
}

/// Edits queued while the server was busy are applied together and the
/// document is analysed once, with its last text and version.
#[test]
fn queued_edits_are_analysed_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("lib.rs");
    std::fs::write(&path, "").unwrap();
    let uri = format!("file://{}", path.display());
    let (server, client) = Connection::memory();
    // Everything is queued before the server reads its first message.
    let queue = |m: Message| client.sender.send(m).unwrap();
    queue(
        Request::new(
            RequestId::from(1),
            "initialize".into(),
            json!({ "capabilities": {} }),
        )
        .into(),
    );
    queue(Notification::new("initialized".into(), json!({})).into());
    queue(
        Notification::new(
            "textDocument/didOpen".into(),
            json!({ "textDocument": { "uri": uri, "languageId": "rust", "version": 1, "text": CLEAN } }),
        )
        .into(),
    );
    let mut text = CLEAN.to_string();
    for (version, typed) in ["let _: () = ", "con.del(", "\"lock:job\")?;"]
        .iter()
        .enumerate()
    {
        let at = text.lines().nth(2).unwrap().encode_utf16().count();
        queue(
            Notification::new(
                "textDocument/didChange".into(),
                json!({
                    "textDocument": { "uri": uri, "version": version + 2 },
                    "contentChanges": [{
                        "range": { "start": { "line": 2, "character": at }, "end": { "line": 2, "character": at } },
                        "text": typed,
                    }],
                }),
            )
            .into(),
        );
        let line_end = text.match_indices('\n').nth(2).unwrap().0;
        text.insert_str(line_end, typed);
    }
    // A request after the edits: its answer comes after what they caused.
    queue(Request::new(RequestId::from(2), "lockaudit/unknown".into(), Value::Null).into());
    let handle = std::thread::spawn(move || {
        serve(server, Options::default()).map_err(|e| e.0).unwrap();
    });
    let c = Client {
        conn: client,
        next_id: 2,
    };
    match c.recv() {
        Message::Response(r) => assert_eq!(r.id, RequestId::from(1)),
        other => panic!("expected the initialize response, got {other:?}"),
    }
    let p = c.notification("textDocument/publishDiagnostics");
    assert_eq!(p["version"], 4, "{p:#?}");
    let diags = p["diagnostics"].as_array().unwrap();
    assert_eq!(diags.len(), 1, "{diags:#?}");
    assert_eq!(diags[0]["code"], "unowned-release");
    match c.recv() {
        Message::Response(r) => assert_eq!(r.id, RequestId::from(2)),
        other => panic!("one analysis for the queued edits, then the answer; got {other:?}"),
    }
    stop(c, handle);
}
