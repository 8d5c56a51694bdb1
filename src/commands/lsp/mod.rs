//! `lockaudit lsp`: a language server on stdio (`lsp-server` and
//! `lsp-types`, as rust-analyzer uses). For every open `.rs` document it
//! runs the engine `check` runs, with the config `check` would use for that
//! file, on the editor's text (saved or not), and publishes the findings as
//! diagnostics on open, change and save. Code actions: the exact fix, the
//! two purpose annotations, a suppression with a reason to fill in, and the
//! check's explain page (also linked from each diagnostic's code).

mod convert;
mod transport;

pub use convert::{offset, position, uri_path, EXPLAIN_COMMAND};

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use lsp_server::{Connection, ErrorCode, Message, Notification, Request, Response};
use lsp_types::{
    CodeActionOrCommand, CodeActionParams, DidChangeTextDocumentParams, DidCloseTextDocumentParams,
    DidOpenTextDocumentParams, DidSaveTextDocumentParams, ExecuteCommandParams, MessageType,
    PublishDiagnosticsParams, ShowMessageParams, TextDocumentContentChangeEvent, Uri,
};
use serde_json::{json, Value};

use crate::cli::LspArgs;
use crate::config::{self, Settings};
use crate::directives::Directives;
use crate::engine::Engine;
use crate::exit::ExitStatus;
use crate::exit::Failure;
use crate::finding::Finding;
use crate::model::resolve::Manifests;
use crate::pack::PackSet;
use crate::prefilter::Prefilter;
use crate::source::SourceFile;
use crate::vocab::CheckId;
use crate::walk;

/// Options of the server.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// `--config`: one config for every document.
    pub config: Option<PathBuf>,
}

pub fn run(args: &LspArgs) -> Result<ExitStatus, Failure> {
    let (conn, io) = transport::stdio()?;
    serve(
        conn,
        Options {
            config: args.config.clone(),
        },
    )?;
    io.finish()?;
    Ok(ExitStatus::Clean)
}

/// Runs the server on `conn` until the client shuts it down. The work runs
/// on a thread with the stack the parser may need, as `check`'s workers do.
pub fn serve(conn: Connection, options: Options) -> Result<(), Failure> {
    let worker = std::thread::Builder::new()
        .name("lockaudit-lsp".into())
        .stack_size(64 * 1024 * 1024)
        .spawn(move || Server::new(conn, options).run())?;
    worker
        .join()
        .map_err(|_| Failure("the language server crashed".into()))?
}

/// A config and the packs it loads, as of the config file's modification time.
struct Loaded {
    settings: Settings,
    packs: PackSet,
    prefilter: Prefilter,
    stamp: Option<SystemTime>,
    /// The first audits of the crate files around the documents analysed
    /// under this configuration, while those files stay unchanged on disk.
    first_audits: crate::cross::FirstAudits,
}

/// One open document: the editor's text and what lockaudit found in it.
struct Doc {
    text: String,
    version: i32,
    findings: Vec<Finding>,
}

struct Server {
    conn: Connection,
    options: Options,
    cwd: PathBuf,
    /// The workspace, canonical: the path the editor names, whose crates'
    /// manifests are read.
    workspace: PathBuf,
    docs: HashMap<Uri, Doc>,
    configs: HashMap<Option<PathBuf>, Arc<Loaded>>,
    /// Documents changed by the messages read so far and not analysed
    /// since, in the order they changed: analysed once each when the
    /// queue runs dry or a request needs their findings.
    dirty: Vec<Uri>,
}

/// At most this many queued messages are read before the changed
/// documents are analysed.
const MAX_BATCH: usize = 1024;

fn capabilities() -> Value {
    json!({
        "positionEncoding": "utf-16",
        "textDocumentSync": {
            "openClose": true,
            "change": 2,
            "save": { "includeText": false },
        },
        "codeActionProvider": { "codeActionKinds": ["quickfix"] },
        "executeCommandProvider": { "commands": [EXPLAIN_COMMAND] },
    })
}

impl Server {
    fn new(conn: Connection, options: Options) -> Server {
        let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
        Server {
            conn,
            options,
            cwd: cwd.clone(),
            workspace: std::fs::canonicalize(&cwd).unwrap_or(cwd),
            docs: HashMap::new(),
            configs: HashMap::new(),
            dirty: Vec::new(),
        }
    }

    fn run(mut self) -> Result<(), Failure> {
        let (id, _params) = self.conn.initialize_start()?;
        self.conn.initialize_finish(
            id,
            json!({
                "capabilities": capabilities(),
                "serverInfo": { "name": "lockaudit", "version": env!("CARGO_PKG_VERSION") },
            }),
        )?;
        // Edits typed faster than they are analysed queue up: each round
        // takes what is queued, applies every change in order and analyses
        // each changed document once, with its last text.
        while let Ok(first) = self.conn.receiver.recv() {
            let mut next = Some(first);
            let mut read = 0;
            while let Some(msg) = next.take() {
                read += 1;
                match msg {
                    Message::Request(req) => {
                        // What was edited before a request is analysed
                        // before it is answered (a shutdown too: the
                        // editor sees the diagnostics of what it sent).
                        self.analyze_dirty();
                        if self.conn.handle_shutdown(&req)? {
                            return Ok(());
                        }
                        let resp = self.request(req);
                        self.send(Message::Response(resp));
                    }
                    Message::Notification(n) if n.method == "exit" => return Ok(()),
                    Message::Notification(n) if n.method == transport::IGNORED => {
                        let why = n.params.as_str().unwrap_or("a message").to_string();
                        crate::escape::eprintln(&format!("lockaudit lsp: {why}: ignored"));
                        self.show(MessageType::ERROR, format!("lockaudit: {why}: ignored"));
                    }
                    Message::Notification(n) => self.notification(n),
                    Message::Response(_) => {}
                }
                if read < MAX_BATCH {
                    next = self.conn.receiver.try_recv().ok();
                }
            }
            self.analyze_dirty();
        }
        Ok(())
    }

    /// Marks a document for analysis at the end of the round.
    fn touch(&mut self, uri: &Uri) {
        if !self.dirty.contains(uri) {
            self.dirty.push(uri.clone());
        }
    }

    fn analyze_dirty(&mut self) {
        for uri in std::mem::take(&mut self.dirty) {
            self.analyze(&uri);
        }
    }

    fn send(&self, msg: Message) {
        // The client went away: the receive loop ends on its own.
        let _ = self.conn.sender.send(msg);
    }

    fn notify(&self, method: &str, params: impl serde::Serialize) {
        self.send(Message::Notification(Notification::new(
            method.into(),
            params,
        )));
    }

    fn show(&self, typ: MessageType, message: String) {
        self.notify("window/showMessage", ShowMessageParams { typ, message });
    }

    fn notification(&mut self, n: Notification) {
        match n.method.as_str() {
            "textDocument/didOpen" => {
                if let Ok(p) = serde_json::from_value::<DidOpenTextDocumentParams>(n.params) {
                    let d = p.text_document;
                    self.docs.insert(
                        d.uri.clone(),
                        Doc {
                            text: d.text,
                            version: d.version,
                            findings: Vec::new(),
                        },
                    );
                    self.touch(&d.uri);
                }
            }
            "textDocument/didChange" => {
                if let Ok(p) = serde_json::from_value::<DidChangeTextDocumentParams>(n.params) {
                    let uri = p.text_document.uri;
                    // Incremental synchronisation: each change is a
                    // ranged edit of the text as the changes before it
                    // left it, or (no range) the whole new text.
                    if let Some(doc) = self.docs.get_mut(&uri) {
                        for change in p.content_changes {
                            apply_change(&mut doc.text, change);
                        }
                        doc.version = p.text_document.version;
                        self.touch(&uri);
                    }
                }
            }
            "textDocument/didSave" => {
                if let Ok(p) = serde_json::from_value::<DidSaveTextDocumentParams>(n.params) {
                    let uri = p.text_document.uri;
                    if self.docs.contains_key(&uri) {
                        self.touch(&uri);
                    } else if uri.as_str().ends_with("lockaudit.yaml")
                        || uri.as_str().ends_with("/Cargo.toml")
                    {
                        // A config changed: every open document may read it.
                        let open: Vec<Uri> = self.docs.keys().cloned().collect();
                        for u in open {
                            self.touch(&u);
                        }
                    }
                }
            }
            "textDocument/didClose" => {
                if let Ok(p) = serde_json::from_value::<DidCloseTextDocumentParams>(n.params) {
                    let uri = p.text_document.uri;
                    self.docs.remove(&uri);
                    self.dirty.retain(|u| *u != uri);
                    self.publish(&uri, Vec::new(), None);
                }
            }
            _ => {}
        }
    }

    fn request(&mut self, req: Request) -> Response {
        let id = req.id.clone();
        match req.method.as_str() {
            "textDocument/codeAction" => {
                match serde_json::from_value::<CodeActionParams>(req.params) {
                    Ok(p) => Response::new_ok(id, self.code_actions(&p)),
                    Err(e) => Response::new_err(id, ErrorCode::InvalidParams as i32, e.to_string()),
                }
            }
            "workspace/executeCommand" => {
                match serde_json::from_value::<ExecuteCommandParams>(req.params) {
                    Ok(p) => self.execute(id, p),
                    Err(e) => Response::new_err(id, ErrorCode::InvalidParams as i32, e.to_string()),
                }
            }
            other => Response::new_err(
                id,
                ErrorCode::MethodNotFound as i32,
                format!("lockaudit does not handle {other}"),
            ),
        }
    }

    fn execute(&self, id: lsp_server::RequestId, p: ExecuteCommandParams) -> Response {
        let check = p
            .arguments
            .first()
            .and_then(Value::as_str)
            .and_then(CheckId::parse);
        match (p.command.as_str(), check) {
            (EXPLAIN_COMMAND, Some(check)) => {
                let text = crate::checks::explain_text(check);
                self.show(MessageType::INFO, text.clone());
                Response::new_ok(id, Value::String(text))
            }
            _ => Response::new_err(
                id,
                ErrorCode::InvalidParams as i32,
                format!("unknown command or check: {} {:?}", p.command, p.arguments),
            ),
        }
    }

    fn code_actions(&self, p: &CodeActionParams) -> Vec<CodeActionOrCommand> {
        let Some(doc) = self.docs.get(&p.text_document.uri) else {
            return Vec::new();
        };
        let src = SourceFile::new("", doc.text.as_str());
        let directives = Directives::scan(&doc.text);
        doc.findings
            .iter()
            .filter(|f| f.suppressed.is_none())
            .filter(|f| convert::touches(&convert::range(&src, f.span), &p.range))
            .flat_map(|f| convert::actions(&src, &directives, &p.text_document.uri, f))
            .map(CodeActionOrCommand::CodeAction)
            .collect()
    }

    /// The config for a file: `--config`, else the nearest one above it,
    /// loaded again when it changes on disk.
    fn config_for(&mut self, path: &Path) -> Arc<Loaded> {
        let config = match &self.options.config {
            Some(c) => Some(c.clone()),
            None => config::discover(path),
        };
        let stamp = config
            .as_ref()
            .and_then(|c| std::fs::metadata(c).and_then(|m| m.modified()).ok());
        if let Some(l) = self.configs.get(&config) {
            if l.stamp == stamp {
                return l.clone();
            }
        }
        let mut settings = Settings::default();
        if let Some(c) = &config {
            let shown = walk::display_path(c, &self.cwd);
            // `--config` is trusted; a discovered config must stay inside
            // its repository, as in `check`.
            let loaded = if self.options.config.is_some() {
                config::load(c, &shown)
            } else {
                config::load_discovered(c, &shown)
            };
            match loaded {
                Ok(s) => {
                    for w in &s.warnings {
                        self.show(MessageType::WARNING, w.clone());
                    }
                    settings = s;
                }
                Err(e) => self.show(
                    MessageType::ERROR,
                    crate::diag::render_yaml_errors(&e, false),
                ),
            }
        }
        let packs = match PackSet::load(&settings.rules, &self.cwd) {
            Ok(p) => p,
            Err(errs) => {
                let text: String = errs
                    .iter()
                    .map(|e| crate::diag::render_yaml_errors(e, false))
                    .collect();
                self.show(MessageType::ERROR, text);
                PackSet::builtin()
            }
        };
        let prefilter = Prefilter::new(&packs, &settings.lock_name);
        let loaded = Arc::new(Loaded {
            settings,
            packs,
            prefilter,
            stamp,
            first_audits: Default::default(),
        });
        self.configs.insert(config, loaded.clone());
        loaded
    }

    fn analyze(&mut self, uri: &Uri) {
        let Some(path) = uri_path(uri) else { return };
        if path.extension().is_none_or(|e| e != "rs") {
            return;
        }
        let loaded = self.config_for(&path);
        let Some(doc) = self.docs.get_mut(uri) else {
            return;
        };
        let shown = walk::display_path(&path, &self.cwd);
        let manifests = Manifests::new(self.cwd.clone()).with_named(vec![self.workspace.clone()]);
        let engine = Engine::new(&loaded.packs, &loaded.settings)
            .with_prefilter(Some(&loaded.prefilter))
            .with_manifests(&manifests);
        // A document over `max-file-size` is not parsed, as `check`
        // would not read the file.
        let size = doc.text.len() as u64;
        doc.findings = if size > loaded.settings.max_file_size {
            engine.too_large(&shown, size).findings
        } else {
            crate::session::audit_in_crate(
                &engine,
                &shown,
                doc.text.as_bytes(),
                &self.cwd,
                None,
                Some(&loaded.first_audits),
            )
            .findings
        };
        let src = SourceFile::new("", doc.text.as_str());
        let diagnostics = doc
            .findings
            .iter()
            .filter(|f| f.suppressed.is_none())
            .map(|f| convert::diagnostic(&src, uri, f))
            .collect();
        let version = Some(doc.version);
        self.publish(uri, diagnostics, version);
    }

    fn publish(&self, uri: &Uri, diagnostics: Vec<lsp_types::Diagnostic>, version: Option<i32>) {
        self.notify(
            "textDocument/publishDiagnostics",
            PublishDiagnosticsParams {
                uri: uri.clone(),
                diagnostics,
                version,
            },
        );
    }
}

/// Applies one change of `textDocument/didChange` to `text`: the whole new
/// text, or a ranged edit whose positions count UTF-16 units (a position
/// past a line's end is its end; a reversed range is empty).
fn apply_change(text: &mut String, change: TextDocumentContentChangeEvent) {
    match change.range {
        None => *text = change.text,
        Some(r) => {
            let src = SourceFile::new("", text.as_str());
            let start = convert::offset(&src, r.start);
            let end = convert::offset(&src, r.end).max(start);
            text.replace_range(start..end, &change.text);
        }
    }
}
