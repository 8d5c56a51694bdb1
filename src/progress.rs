//! A progress line on standard error for runs that take a while: drawn only
//! when standard error is a terminal and the run has lasted over a second,
//! and cleared before the report is printed. Piped or redirected output,
//! CI logs and quick runs never see it.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How long a run goes before its progress is drawn.
fn delay() -> Duration {
    // `LOCKAUDIT_INTERNAL_PROGRESS_AFTER_MS`: how the tests show the line
    // without a slow run.
    std::env::var("LOCKAUDIT_INTERNAL_PROGRESS_AFTER_MS")
        .ok()
        .and_then(|v| v.parse().ok())
        .map(Duration::from_millis)
        .unwrap_or(Duration::from_secs(1))
}

pub struct Progress {
    bar: Option<ProgressBar>,
    started: Instant,
    delay: Duration,
    shown: AtomicBool,
}

impl Progress {
    /// A line counting `total` files, drawn once the run is slow; nothing
    /// at all when standard error is not a terminal.
    pub fn files(total: usize) -> Progress {
        use std::io::IsTerminal;
        let bar = std::io::stderr().is_terminal().then(|| {
            let bar =
                ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::hidden());
            bar.set_style(
                ProgressStyle::with_template(
                    "{spinner} {msg} {pos}/{len} files {wide_bar} {elapsed}",
                )
                .unwrap_or_else(|_| ProgressStyle::default_bar())
                .progress_chars("=> "),
            );
            bar.set_message("auditing");
            bar
        });
        Progress {
            bar,
            started: Instant::now(),
            delay: delay(),
            shown: AtomicBool::new(false),
        }
    }

    /// One more file done.
    pub fn inc(&self) {
        if let Some(bar) = &self.bar {
            bar.inc(1);
            self.show_if_slow(bar);
        }
    }

    /// More files to do (found by `mod` declarations).
    pub fn more(&self, n: usize) {
        if let Some(bar) = &self.bar {
            bar.inc_length(n as u64);
        }
    }

    /// What the run does now, once the files are read.
    pub fn phase(&self, what: &'static str) {
        if let Some(bar) = &self.bar {
            bar.set_message(what);
            self.show_if_slow(bar);
        }
    }

    fn show_if_slow(&self, bar: &ProgressBar) {
        if !self.shown.load(Ordering::Relaxed)
            && self.started.elapsed() >= self.delay
            && !self.shown.swap(true, Ordering::Relaxed)
        {
            bar.set_draw_target(ProgressDrawTarget::stderr());
            bar.enable_steady_tick(Duration::from_millis(120));
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}
