//! The one writer: every file lockaudit writes goes through [`replace`]
//! (`--output`, `--write-baseline`, `--update-baseline`, `check --fix`,
//! `annotate --write`, `init`). The language server writes nothing itself:
//! its edits go to the editor, for the open document only.
//!
//! The path may come from a checkout a stranger controls, so:
//!
//! - No symbolic link is followed below the repository root: the directory
//!   is reached one component at a time, and a link among them is refused
//!   (links above the root, or in a path outside it, are the caller's
//!   machine and are followed). A link at the path itself is replaced by
//!   the new file, never written through; a file that was read before is
//!   never a link.
//! - Only regular files are replaced. A device is written in place only
//!   when the path names it (`/dev/null`, `/dev/stdout`), or when it lies
//!   outside the repository; inside it, a FIFO or device is refused.
//! - The write is atomic: a temporary file in the same directory, then a
//!   rename. An interrupted run leaves the old file or none; a run stopped
//!   by SIGTERM, SIGINT or SIGHUP removes the temporary file first.
//! - A read-only file is refused. A replaced file keeps its permissions
//!   (a report loses execute bits); a new one gets the umask's default.
//! - A file that was read before (a source `--fix` edits, a baseline
//!   `--update-baseline` prunes) must still hold what was read just
//!   before it is replaced; otherwise it is left alone.

use std::io::Write;
use std::path::{Component, Path, PathBuf};

/// How [`replace`] writes.
#[derive(Debug, Clone, Copy)]
pub struct Options<'a> {
    /// The repository root: no symbolic link is followed below it.
    pub root: &'a Path,
    /// What was read from the file before: it must still hold exactly
    /// these bytes, or it is left alone.
    pub read: Option<&'a [u8]>,
    /// Keep the file's permissions as they are (a source file); otherwise
    /// execute bits are dropped (a report).
    pub keep_mode: bool,
}

/// Why a file was not written; the message names no temporary file.
#[derive(Debug)]
pub struct Refused(pub String);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn refused(why: impl Into<String>) -> Refused {
    Refused(why.into())
}

/// An I/O error without the temporary file's path.
fn io(e: std::io::Error) -> Refused {
    let e = e
        .raw_os_error()
        .map(std::io::Error::from_raw_os_error)
        .unwrap_or_else(|| std::io::Error::from(e.kind()));
    Refused(e.to_string())
}

/// Writes `bytes` to `path` as the module says.
pub fn replace(path: &Path, bytes: &[u8], opts: &Options) -> Result<(), Refused> {
    // A device the caller named, written in place even through its links.
    if names_a_device(path) && opts.read.is_none() {
        return in_place(path, bytes);
    }
    let root = std::fs::canonicalize(opts.root).unwrap_or_else(|_| opts.root.to_path_buf());
    let Some(name) = path.file_name() else {
        return Err(refused("is a directory"));
    };
    let dir = physical_dir(path, &root)?;
    let target = dir.join(name);
    let inside = dir.starts_with(&root);
    let meta = match std::fs::symlink_metadata(&target) {
        Ok(m) => Some(m),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => return Err(io(e)),
    };
    let perms = match &meta {
        None if opts.read.is_some() => {
            return Err(refused("removed since it was read: not written"))
        }
        None => default_permissions(),
        Some(m) if m.file_type().is_symlink() => {
            if opts.read.is_some() {
                return Err(refused(
                    "a symbolic link: never written through, left alone",
                ));
            }
            // Replaced by the rename; a link lends nothing (its target may
            // be a program).
            default_permissions()
        }
        Some(m) if m.is_dir() => return Err(refused("is a directory")),
        Some(m) if !m.is_file() => {
            if inside || opts.read.is_some() {
                return Err(refused("not a regular file: not written"));
            }
            return in_place(&target, bytes);
        }
        Some(m) => {
            if read_only(&target, m) {
                return Err(refused(
                    "read-only: not replaced (make it writable, or write elsewhere)",
                ));
            }
            Some(if opts.keep_mode {
                m.permissions()
            } else {
                without_exec(m.permissions())
            })
        }
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(".lockaudit-");
    if let Some(p) = perms {
        builder.permissions(p);
    }
    // The handler is in place before the file exists, and the file is
    // created and listed under the list's lock: a signal at any moment
    // finds it listed, or waits until it is.
    Pending::handle_signals();
    let (mut tmp, pending) = {
        let mut listed = lock(&PENDING);
        let tmp = builder.tempfile_in(&dir).map_err(io)?;
        listed.push(tmp.path().to_path_buf());
        let pending = Pending(tmp.path().to_path_buf());
        (tmp, pending)
    };
    tmp.write_all(bytes)
        .and_then(|_| tmp.as_file().sync_all())
        .map_err(io)?;
    write_pause();
    if let Some(read) = opts.read {
        // Just before the rename: the file still holds what was read.
        let now = std::fs::symlink_metadata(&target)
            .ok()
            .filter(|m| m.is_file())
            .and_then(|_| std::fs::read(&target).ok());
        if now.as_deref() != Some(read) {
            return Err(refused("changed since it was read: left alone"));
        }
    }
    tmp.persist(&target).map_err(|e| io(e.error))?;
    drop(pending);
    Ok(())
}

/// The directory that will hold `path`, reached one component at a time
/// from the current directory (or `/`): a symbolic link found below
/// `root` is refused, one outside it is followed.
fn physical_dir(path: &Path, root: &Path) -> Result<PathBuf, Refused> {
    let parent = path.parent().unwrap_or(Path::new(""));
    let mut cur = if path.is_absolute() {
        PathBuf::new()
    } else {
        let cwd = std::env::current_dir().map_err(io)?;
        std::fs::canonicalize(&cwd).unwrap_or(cwd)
    };
    let mut walked = PathBuf::new();
    for c in parent.components() {
        walked.push(c.as_os_str());
        match c {
            Component::Prefix(_) | Component::RootDir => cur.push(c.as_os_str()),
            Component::CurDir => {}
            // `cur` is always a real directory, so its parent is the
            // physical one.
            Component::ParentDir => {
                cur.pop();
            }
            Component::Normal(name) => {
                let next = cur.join(name);
                let meta = std::fs::symlink_metadata(&next).map_err(|e| {
                    if e.kind() == std::io::ErrorKind::NotFound {
                        refused(format!(
                            "the directory {} does not exist",
                            crate::escape::path(&walked)
                        ))
                    } else {
                        io(e)
                    }
                })?;
                if meta.file_type().is_symlink() {
                    if cur.starts_with(root) {
                        return Err(refused(format!(
                            "{} is a symbolic link inside the repository: never written through",
                            crate::escape::path(&walked)
                        )));
                    }
                    cur = std::fs::canonicalize(&next).map_err(io)?;
                } else {
                    cur = next;
                }
                if !std::fs::metadata(&cur).is_ok_and(|m| m.is_dir()) {
                    return Err(refused(format!(
                        "{} is not a directory",
                        crate::escape::path(&walked)
                    )));
                }
            }
        }
    }
    Ok(cur)
}

/// Whether a regular file may not be written: no write bit at all, or
/// this user may not open it for writing (opening does not change it).
fn read_only(path: &Path, meta: &std::fs::Metadata) -> bool {
    meta.permissions().readonly()
        || std::fs::OpenOptions::new()
            .write(true)
            .open(path)
            .is_err_and(|e| e.kind() == std::io::ErrorKind::PermissionDenied)
}

fn in_place(path: &Path, bytes: &[u8]) -> Result<(), Refused> {
    std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .and_then(|mut f| f.write_all(bytes).and_then(|_| f.flush()))
        .map_err(|e| Refused(e.to_string()))
}

/// `LOCKAUDIT_INTERNAL_WRITE_PAUSE_MS=<ms>` holds a written temporary
/// file that long before it replaces the target: how the tests stop a run
/// in the middle of the write, or change the target meanwhile.
fn write_pause() {
    if let Some(ms) = std::env::var("LOCKAUDIT_INTERNAL_WRITE_PAUSE_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        std::thread::sleep(std::time::Duration::from_millis(ms.min(60_000)));
    }
}

fn lock<T>(m: &std::sync::Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Temporary files being written: a run stopped by SIGTERM, SIGINT or
/// SIGHUP removes them before it dies, so no complete-looking
/// `.lockaudit-XXXXXX` is left beside the target.
static PENDING: std::sync::Mutex<Vec<PathBuf>> = std::sync::Mutex::new(Vec::new());

/// One temporary file in [`PENDING`] for as long as it lives.
struct Pending(PathBuf);

impl Pending {
    /// Installs, once, the handler that removes the listed files.
    fn handle_signals() {
        static HANDLER: std::sync::Once = std::sync::Once::new();
        HANDLER.call_once(|| {
            use signal_hook::consts::{SIGHUP, SIGINT, SIGTERM};
            let Ok(mut signals) = signal_hook::iterator::Signals::new([SIGTERM, SIGINT, SIGHUP])
            else {
                return;
            };
            std::thread::spawn(move || {
                if let Some(sig) = signals.forever().next() {
                    for p in lock(&PENDING).drain(..) {
                        let _ = std::fs::remove_file(p);
                    }
                    // Die of the signal, as without the handler.
                    let _ = signal_hook::low_level::emulate_default_handler(sig);
                    std::process::exit(128 + sig);
                }
            });
        });
    }
}

impl Drop for Pending {
    fn drop(&mut self) {
        lock(&PENDING).retain(|p| p != &self.0);
    }
}

/// `/dev/…` or `/proc/self/fd/…`, named as such on the command line: a
/// device the caller asked for, written in place even through its links.
fn names_a_device(path: &Path) -> bool {
    path.starts_with("/dev") || path.starts_with("/proc/self/fd")
}

#[cfg(unix)]
fn without_exec(p: std::fs::Permissions) -> std::fs::Permissions {
    use std::os::unix::fs::PermissionsExt;
    std::fs::Permissions::from_mode(p.mode() & 0o666)
}

#[cfg(not(unix))]
fn without_exec(p: std::fs::Permissions) -> std::fs::Permissions {
    p
}

#[cfg(unix)]
fn default_permissions() -> Option<std::fs::Permissions> {
    use std::os::unix::fs::PermissionsExt;
    // Subject to the umask, as for any newly created file.
    Some(std::fs::Permissions::from_mode(0o666))
}

#[cfg(not(unix))]
fn default_permissions() -> Option<std::fs::Permissions> {
    None
}
