//! `--format human`: rustc-style diagnostics rendered by miette: the
//! offending span, a label, secondary labels, help and notes. Colour only on
//! a terminal or with `--color always`.

use std::fmt;

use miette::{
    Diagnostic, GraphicalReportHandler, GraphicalTheme, LabeledSpan, MietteError,
    MietteSpanContents, SourceCode, SourceSpan, SpanContents,
};

use super::{stale_lines, summary_line, Options, Summary};
use crate::finding::{Finding, Severity};
use crate::source::SourceFile;

struct Rendered<'a> {
    f: &'a Finding,
    message: String,
    src: Window,
    labels: Vec<LabeledSpan>,
    help: Option<String>,
}

impl fmt::Debug for Rendered<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl fmt::Display for Rendered<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Rendered<'_> {}

impl Diagnostic for Rendered<'_> {
    fn code<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        Some(Box::new(self.f.check.as_str()))
    }

    fn severity(&self) -> Option<miette::Severity> {
        Some(match self.f.severity {
            Severity::Error => miette::Severity::Error,
            Severity::Warning => miette::Severity::Warning,
            Severity::Note => miette::Severity::Advice,
        })
    }

    fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.help
            .as_ref()
            .map(|h| Box::new(h) as Box<dyn fmt::Display>)
    }

    fn source_code(&self) -> Option<&dyn SourceCode> {
        Some(&self.src)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = LabeledSpan> + '_>> {
        Some(Box::new(self.labels.iter().cloned()))
    }
}

/// Longest stretch of one line shown, in bytes: a generated file's
/// megabyte line is shown clipped around the finding, so a report never
/// grows with line length times findings.
const MAX_SHOWN: usize = 240;
/// Lines shown after a finding's first line at most.
const MAX_LINES: usize = 60;

/// One line of a [`Window`].
struct WindowLine {
    /// The shown part of the line, as byte offsets into the file.
    clip_start: usize,
    clip_end: usize,
    /// Where the line starts in the window text, after any `…` prefix.
    start: usize,
}

/// The part of a file one finding shows: the lines its labels touch and a
/// line of context around them, each escaped (no control character of the
/// audited file reaches the report) and clipped to [`MAX_SHOWN`] bytes.
/// Lines and columns in the header are the file's own.
struct Window {
    name: String,
    text: String,
    /// 0-based number of the window's first line in the file.
    first_line: usize,
    /// 1-based file line numbers of the window.
    from: usize,
    lines: Vec<WindowLine>,
    /// The primary span in window coordinates, and its file column (0-based).
    primary: (usize, usize),
    primary_column: usize,
}

impl Window {
    fn new(f: &Finding, src: &SourceFile) -> Window {
        let text = &src.text;
        // A final newline does not start a line of its own.
        let last = if text.ends_with('\n') {
            (src.line_count() - 1).max(1)
        } else {
            src.line_count()
        };
        let start_line = f.span.start.line.clamp(1, last);
        let cap = start_line + MAX_LINES;
        let mut lo = start_line;
        let mut hi = f.span.end.line.clamp(start_line, cap);
        for l in &f.labels {
            if l.span.start.line + MAX_LINES >= start_line && l.span.start.line <= cap {
                lo = lo.min(l.span.start.line.max(1));
                hi = hi.max(l.span.end.line.min(cap));
            }
        }
        let from = lo.saturating_sub(1).max(1);
        let to = (hi + 1).min(last);
        // Where each line is anchored when clipped: the first span start
        // on it, else the first span end.
        let spans: Vec<crate::source::Span> = std::iter::once(f.span)
            .chain(f.labels.iter().map(|l| l.span))
            .collect();
        let mut out = String::new();
        let mut lines = Vec::new();
        for n in from..=to {
            let line = src.line_text(n);
            let line_start = src.pos_of_line_col(n, 0).offset;
            let line_end = line_start + line.len();
            let (mut cs, mut ce) = (line_start, line_end);
            if line.len() > MAX_SHOWN {
                let anchor = spans
                    .iter()
                    .find(|s| s.start.line == n)
                    .map(|s| s.start.offset)
                    .or_else(|| spans.iter().find(|s| s.end.line == n).map(|s| s.end.offset))
                    .unwrap_or(line_start);
                cs = floor_boundary(text, anchor.saturating_sub(MAX_SHOWN / 3).max(line_start));
                ce = floor_boundary(text, (cs + MAX_SHOWN).min(line_end));
            }
            if cs > line_start {
                out.push('…');
            }
            let start = out.len();
            out.push_str(&crate::escape::text(&text[cs..ce]));
            if ce < line_end {
                out.push('…');
            }
            out.push('\n');
            lines.push(WindowLine {
                clip_start: cs,
                clip_end: ce,
                start,
            });
        }
        Window {
            name: f.path.clone(),
            text: out,
            first_line: from - 1,
            from,
            lines,
            primary: (0, 0),
            primary_column: f.span.start.column.saturating_sub(1),
        }
    }

    /// A file position in window coordinates (clamped into the window).
    fn offset(&self, text: &str, line: usize, offset: usize) -> usize {
        let i = line.clamp(self.from, self.from + self.lines.len() - 1) - self.from;
        let l = &self.lines[i];
        let o = if line < self.from {
            l.clip_start
        } else if line >= self.from + self.lines.len() {
            l.clip_end
        } else {
            offset.clamp(l.clip_start, l.clip_end)
        };
        let o = floor_boundary(text, o);
        l.start
            + text[l.clip_start..o]
                .chars()
                .map(crate::escape::escaped_len)
                .sum::<usize>()
    }

    fn span_in(&self, text: &str, s: &crate::source::Span) -> (usize, usize) {
        let a = self.offset(text, s.start.line, s.start.offset);
        let b = self.offset(text, s.end.line, s.end.offset).max(a);
        (a, (b - a).max(1))
    }
}

fn floor_boundary(text: &str, mut i: usize) -> usize {
    i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

impl SourceCode for Window {
    fn read_span<'a>(
        &'a self,
        span: &SourceSpan,
        before: usize,
        after: usize,
    ) -> Result<Box<dyn SpanContents<'a> + 'a>, MietteError> {
        let inner = self.text.read_span(span, before, after)?;
        let column = if (span.offset(), span.len()) == self.primary {
            self.primary_column
        } else {
            inner.column()
        };
        Ok(Box::new(MietteSpanContents::new_named(
            self.name.clone(),
            inner.data(),
            *inner.span(),
            inner.line() + self.first_line,
            column,
            // miette's `line_count` is the file line the contents end on.
            inner.line_count() + self.first_line,
        )))
    }
}

pub fn render_one(f: &Finding, src: &SourceFile, opts: &Options) -> String {
    let esc = |s: &str| crate::escape::text(s).into_owned();
    let mut help = f.help.as_deref().map(esc);
    for n in &f.notes {
        let line = format!("note: {}", esc(n));
        help = Some(match help {
            Some(h) => format!("{h}\n{line}"),
            None => line,
        });
    }
    if let Some(j) = &f.suppressed {
        let line = if j.is_empty() {
            "suppressed in source".to_string()
        } else {
            format!("suppressed in source: {}", esc(j))
        };
        help = Some(match help {
            Some(h) => format!("{h}\n{line}"),
            None => line,
        });
    }
    let mut window = Window::new(f, src);
    let primary = window.span_in(&src.text, &f.span);
    window.primary = primary;
    let mut labels = vec![LabeledSpan::new_primary_with_span(
        f.label.as_deref().map(esc),
        primary,
    )];
    for l in &f.labels {
        labels.push(LabeledSpan::new_with_span(
            Some(esc(&l.message)),
            window.span_in(&src.text, &l.span),
        ));
    }
    let r = Rendered {
        f,
        message: esc(&f.message),
        src: window,
        labels,
        help,
    };
    let theme = if opts.color {
        GraphicalTheme::unicode()
    } else {
        GraphicalTheme::unicode_nocolor()
    };
    let handler = GraphicalReportHandler::new_themed(theme)
        .with_width(opts.width)
        .with_links(false)
        .with_context_lines(1);
    let mut out = String::new();
    if handler.render_report(&mut out, &r).is_err() {
        out = super::short::line(f);
    }
    out
}

pub fn render(findings: &[Finding], summary: &Summary, opts: &Options) -> String {
    let mut out = String::new();
    // Findings arrive sorted by path: each file is indexed once.
    let mut current: Option<SourceFile> = None;
    for f in findings.iter().filter(|f| f.suppressed.is_none()) {
        if current.as_ref().is_none_or(|c| c.path != f.path) {
            let text = opts.sources.get(&f.path).map(String::as_str).unwrap_or("");
            current = Some(SourceFile::new(f.path.clone(), text));
        }
        if let Some(src) = &current {
            out.push_str(&render_one(f, src, opts));
        }
        out.push('\n');
    }
    // A suppressed finding is not shown, but a suppression that does not say
    // why is worth a line.
    for f in findings {
        if f.suppressed.as_deref() == Some("") {
            out.push_str(&format!(
                "note: {}:{}:{}: `{}` is suppressed without a reason: say why after the `allow(...)`\n",
                crate::escape::text(&f.path),
                f.span.start.line,
                f.span.start.column,
                f.check.as_str()
            ));
        }
    }
    if !opts.quiet {
        out.push_str(&stale_lines(summary));
        out.push_str(&summary_line(summary));
        out.push('\n');
    }
    out
}
