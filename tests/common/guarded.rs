//! Runs of the binary under an address-space cap and a timeout, for the
//! suites that feed it hostile input: a run that aborts, hangs or takes
//! too much memory fails the test instead of the machine.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Address space a run may use. Generous for a debug build with its
/// worker stacks reserved, and far below what any of the bombs took.
pub const MEMORY: u64 = 1536 << 20;
pub const TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug)]
pub struct Run {
    /// `None`: killed by a signal (an abort, the timeout).
    pub code: Option<i32>,
    pub stdout: String,
    pub stderr: String,
    pub raw_stdout: Vec<u8>,
    pub raw_stderr: Vec<u8>,
}

pub fn run_with(dir: &Path, args: &[&str], setup: impl FnOnce(&mut Command)) -> Run {
    let mut cmd = Command::new(super::bin());
    cmd.args(args)
        .current_dir(dir)
        .env_remove("NO_COLOR")
        .env_remove("LOCKAUDIT_INTERNAL_PANIC_ON")
        .env("MALLOC_ARENA_MAX", "2")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    setup(&mut cmd);
    // SAFETY: setrlimit is async-signal-safe; nothing else runs between
    // fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            let lim = libc::rlimit {
                rlim_cur: MEMORY,
                rlim_max: MEMORY,
            };
            if libc::setrlimit(libc::RLIMIT_AS, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().expect("the lockaudit binary runs");
    let mut out = child.stdout.take();
    let mut err = child.stderr.take();
    let read_out = std::thread::spawn(move || {
        let mut b = Vec::new();
        if let Some(o) = out.as_mut() {
            let _ = o.read_to_end(&mut b);
        }
        b
    });
    let read_err = std::thread::spawn(move || {
        let mut b = Vec::new();
        if let Some(e) = err.as_mut() {
            let _ = e.read_to_end(&mut b);
        }
        b
    });
    let start = Instant::now();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if start.elapsed() > TIMEOUT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("lockaudit {args:?} did not finish in {TIMEOUT:?}");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let raw_stdout = read_out.join().unwrap();
    let raw_stderr = read_err.join().unwrap();
    Run {
        code: status.code(),
        stdout: String::from_utf8_lossy(&raw_stdout).into_owned(),
        stderr: String::from_utf8_lossy(&raw_stderr).into_owned(),
        raw_stdout,
        raw_stderr,
    }
}

pub fn run(dir: &Path, args: &[&str]) -> Run {
    run_with(dir, args, |_| {})
}
