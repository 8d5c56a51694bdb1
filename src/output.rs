//! Where reports go: standard output (refused when it was closed at
//! start, a broken pipe after a partial read is no error) or a file written
//! atomically through the one writer ([`crate::write`]), made safe for a
//! CI log either way.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::exit::Failure;

/// Writes a report or a baseline through the one writer
/// ([`crate::write`]); `root`: the repository root, below which no
/// symbolic link is followed; `read`: what was read from the file before,
/// which it must still hold.
pub fn write_atomic(
    path: &Path,
    bytes: &[u8],
    root: &Path,
    read: Option<&[u8]>,
) -> Result<(), Failure> {
    let opts = crate::write::Options {
        root,
        read,
        keep_mode: false,
    };
    crate::write::replace(path, bytes, &opts)
        .map_err(|e| Failure(format!("{}: cannot write: {e}", crate::escape::path(path))))
}

/// The repository root of a command that prepares no run: the git top
/// level above the current directory, or the current directory.
pub(crate) fn cwd_root() -> PathBuf {
    let cwd = std::env::current_dir().unwrap_or_else(|_| PathBuf::from("."));
    crate::config::repo_root(&cwd).unwrap_or(cwd)
}

/// Whether standard output was closed when the process started
/// (`lockaudit check >&-`). The Rust runtime then opens `/dev/null` in its
/// place before `main`, where a report would be lost without a word; a
/// constructor, which runs before the runtime does, remembers it.
static STDOUT_CLOSED_AT_START: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

#[cfg(any(target_os = "linux", target_os = "android", target_vendor = "apple"))]
#[used]
#[cfg_attr(
    any(target_os = "linux", target_os = "android"),
    link_section = ".init_array"
)]
#[cfg_attr(target_vendor = "apple", link_section = "__DATA,__mod_init_func")]
static RECORD_STDOUT: extern "C" fn() = record_stdout;

#[cfg(any(target_os = "linux", target_os = "android", target_vendor = "apple"))]
extern "C" fn record_stdout() {
    // SAFETY: `fcntl(F_GETFD)` only asks whether descriptor 1 is open.
    let closed = unsafe { libc::fcntl(1, libc::F_GETFD) } == -1;
    STDOUT_CLOSED_AT_START.store(closed, std::sync::atomic::Ordering::Relaxed);
}

fn stdout_closed_at_start() -> bool {
    // Named here, so the constructor is linked wherever this is.
    #[cfg(any(target_os = "linux", target_os = "android", target_vendor = "apple"))]
    std::hint::black_box(&RECORD_STDOUT);
    STDOUT_CLOSED_AT_START.load(std::sync::atomic::Ordering::Relaxed)
}

pub(crate) fn emit(output: Option<&Path>, text: &str) -> Result<(), Failure> {
    emit_report(output, None, text, false)
}

/// Writes the report, made safe for a CI log ([`crate::escape::log`]),
/// keeping the workflow commands of the `--format github` report
/// (`commands`); a file gets the same bytes as standard output. `root`:
/// the run's repository root, else the current directory's.
pub(crate) fn emit_report(
    output: Option<&Path>,
    root: Option<&Path>,
    text: &str,
    commands: bool,
) -> Result<(), Failure> {
    let text = crate::escape::log(text, commands);
    match output {
        Some(p) => match root {
            Some(r) => write_atomic(p, text.as_bytes(), r, None),
            None => write_atomic(p, text.as_bytes(), &cwd_root(), None),
        },
        None if stdout_closed_at_start() && !text.is_empty() => Err(Failure(
            "cannot write the report to standard output: it is closed (use --output FILE)".into(),
        )),
        None => {
            let mut out = std::io::stdout().lock();
            let mut written = 0;
            let bytes = text.as_bytes();
            while written < bytes.len() {
                match out.write(&bytes[written..]) {
                    Ok(0) => break,
                    Ok(n) => written += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    // `lockaudit | head` read what it wanted: not an error.
                    Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe && written > 0 => {
                        return Ok(())
                    }
                    // Nobody read any of it: the report is lost, say so.
                    Err(e) => {
                        return Err(Failure(format!(
                            "cannot write the report to standard output: {e} (use --output FILE)"
                        )))
                    }
                }
            }
            match out.flush() {
                Ok(()) => Ok(()),
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe && written > 0 => Ok(()),
                Err(e) => Err(Failure(format!(
                    "cannot write the report to standard output: {e} (use --output FILE)"
                ))),
            }
        }
    }
}
