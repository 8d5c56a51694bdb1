//! `--format human`: rustc-style diagnostics. Each finding is headed
//! `error[check-id]: message` (so a log can be searched for `error`), then
//! its own location and snippet with the span underlined, then each related
//! place in its own snippet, then `help` and notes. Prose wraps to the
//! width (the terminal's, or `COLUMNS`, or 100) without ever splitting
//! inline code; a source line wider than that is cut around the span, with
//! `...` where it was cut, as rustc does. Colour only on a terminal or with
//! `--color always`.

use super::{stale_lines, summary_line, Options, Summary};
use crate::finding::{Finding, Label, Severity};
use crate::source::Span;

const RESET: &str = "\x1b[0m";
const BOLD: &str = "\x1b[1m";
const BLUE: &str = "\x1b[1;34m";

fn severity_color(s: Severity) -> &'static str {
    match s {
        Severity::Error => "\x1b[1;31m",
        Severity::Warning => "\x1b[1;33m",
        Severity::Note => "\x1b[1;32m",
    }
}

struct Painter {
    on: bool,
}

impl Painter {
    fn paint(&self, color: &str, text: &str) -> String {
        if self.on && !text.is_empty() {
            format!("{color}{text}{RESET}")
        } else {
            text.to_string()
        }
    }
}

/// A source line as shown: control characters and bidirectional overrides
/// (an escape sequence in a hostile file) are escaped as everywhere else
/// (`\x1b`, `\u{202e}`, see [`crate::escape`]); a tab is four spaces.
fn clean(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    for c in line.chars() {
        match c {
            '\t' => out.push_str("    "),
            c if crate::escape::needs_escape(c) => crate::escape::push_escaped(&mut out, c),
            c => out.push(c),
        }
    }
    out
}

/// How many display columns `c` takes as [`clean`] shows it.
fn width(c: char) -> usize {
    match c {
        '\t' => 4,
        // An escape is ASCII: its length is its width.
        c if crate::escape::needs_escape(c) => crate::escape::escaped_len(c),
        _ => 1,
    }
}

/// Characters between two checkpoints of a [`Columns`] index.
const STEP: usize = 64;

/// One source line's display columns, measured once: a checkpoint (byte
/// offset, display column) every [`STEP`] characters, so a column of a
/// megabyte-long line is found in at most [`STEP`] steps, whatever the
/// number of findings on it.
struct Columns<'a> {
    line: &'a str,
    marks: Vec<(usize, usize)>,
    /// Characters, display columns and leading white space of the line.
    chars: usize,
    width: usize,
    indent: usize,
}

impl<'a> Columns<'a> {
    fn new(line: &'a str) -> Columns<'a> {
        let mut marks = Vec::with_capacity(line.len() / STEP + 1);
        let (mut chars, mut shown) = (0, 0);
        for (b, c) in line.char_indices() {
            if chars % STEP == 0 {
                marks.push((b, shown));
            }
            chars += 1;
            shown += width(c);
        }
        if marks.is_empty() {
            marks.push((0, 0));
        }
        let indent = line.chars().take_while(|c| c.is_whitespace()).count();
        Columns {
            line,
            marks,
            chars,
            width: shown,
            indent,
        }
    }

    /// The display column (0-based) where 1-based character column `col`
    /// starts (the line's width past its end).
    fn display_col(&self, col: usize) -> usize {
        let before = col.saturating_sub(1);
        if before >= self.chars {
            return self.width;
        }
        let (byte, mut shown) = self.marks[before / STEP];
        for c in self.line[byte..].chars().take(before % STEP) {
            shown += width(c);
        }
        shown
    }

    /// The line as [`clean`] shows it, from display column `from` to `to`.
    fn cut(&self, from: usize, to: usize) -> String {
        // The checkpoint at or before `from`, then the character that
        // holds it.
        let i = self.marks.partition_point(|&(_, d)| d <= from).max(1) - 1;
        let (byte, mut start) = self.marks[i];
        let mut rest = self.line[byte..].char_indices();
        let mut at = self.line.len();
        for (b, c) in rest.by_ref() {
            if start + width(c) > from {
                at = byte + b;
                break;
            }
            start += width(c);
        }
        let mut end = self.line.len();
        let mut shown = start;
        for (b, c) in self.line[at..].char_indices() {
            if shown >= to {
                end = at + b;
                break;
            }
            shown += width(c);
        }
        clean(&self.line[at..end])
            .chars()
            .skip(from - start)
            .take(to.saturating_sub(from))
            .collect()
    }
}

/// A file's lines, split once, and the [`Columns`] of each line shown,
/// measured once however many findings show it.
pub(crate) struct Lines<'a> {
    lines: Vec<&'a str>,
    columns: std::cell::RefCell<std::collections::HashMap<usize, std::rc::Rc<Columns<'a>>>>,
}

impl<'a> Lines<'a> {
    pub(crate) fn new(text: &'a str) -> Lines<'a> {
        Lines {
            lines: text.lines().collect(),
            columns: Default::default(),
        }
    }

    fn is_empty(&self) -> bool {
        self.lines.is_empty()
    }

    /// The columns of 1-based line `n` (an empty line past the end).
    fn get(&self, n: usize) -> std::rc::Rc<Columns<'a>> {
        let line = self.lines.get(n.wrapping_sub(1)).copied().unwrap_or("");
        self.columns
            .borrow_mut()
            .entry(n)
            .or_insert_with(|| std::rc::Rc::new(Columns::new(line)))
            .clone()
    }
}

/// Splits prose into the pieces a line may break between: words, with
/// anything in backticks kept whole (spaces included).
fn atoms(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_code = false;
    for c in text.chars() {
        if c == '`' {
            in_code = !in_code;
            cur.push(c);
        } else if c.is_whitespace() && !in_code {
            if !cur.is_empty() {
                out.push(std::mem::take(&mut cur));
            }
        } else {
            cur.push(c);
        }
    }
    if !cur.is_empty() {
        out.push(cur);
    }
    out
}

/// Wraps `text` to `width` columns: the first line after `first` columns
/// already used, the others indented by `indent` spaces. A piece longer
/// than a line (a long inline code span) gets a line of its own, unsplit.
pub(crate) fn wrap(text: &str, width: usize, first: usize, indent: usize) -> Vec<String> {
    let mut lines = Vec::new();
    for (i, para) in text.split('\n').enumerate() {
        let mut line = String::new();
        let mut used = if i == 0 { first } else { indent };
        let mut started = false;
        for atom in atoms(para) {
            let len = atom.chars().count();
            if started && used + 1 + len > width {
                lines.push(std::mem::take(&mut line));
                used = indent;
                started = false;
            }
            if started {
                line.push(' ');
                used += 1;
            }
            line.push_str(&atom);
            used += len;
            started = true;
        }
        lines.push(line);
    }
    lines
}

/// Joins wrapped lines, indenting all but the first.
fn join_wrapped(lines: &[String], indent: usize) -> String {
    let pad = " ".repeat(indent);
    lines.join(&format!("\n{pad}"))
}

/// One underline under a source line.
struct Mark<'a> {
    span: Span,
    text: Option<&'a str>,
    primary: bool,
}

struct Snippet<'a, 'l> {
    f: &'a Finding,
    lines: &'a Lines<'l>,
    gutter: usize,
    width: usize,
    p: &'a Painter,
}

impl Snippet<'_, '_> {
    fn bar(&self) -> String {
        self.p
            .paint(BLUE, &format!("{} |", " ".repeat(self.gutter)))
    }

    /// Columns left for source text after the gutter.
    fn avail(&self) -> usize {
        self.width.saturating_sub(self.gutter + 3).max(20)
    }

    /// How many display columns of line `n` to cut on the left so that the
    /// mark at `from` shows on a line wider than the width (rustc's way):
    /// 0 when the line fits.
    fn shift(&self, n: usize, from: usize) -> usize {
        let len = self.lines.get(n).width;
        let avail = self.avail();
        if len <= avail {
            return 0;
        }
        from.saturating_sub(avail / 3).min(len - avail)
    }

    /// Source line `n`, shown from display column `shift`; `...` marks
    /// where a line too wide for the width was cut.
    fn source_line(&self, n: usize, shift: usize) -> String {
        let cols = self.lines.get(n);
        let num = self.p.paint(BLUE, &format!("{n:>w$} |", w = self.gutter));
        let avail = self.avail();
        let len = cols.width;
        let text: String = if len <= avail {
            cols.cut(0, len)
        } else {
            let end = (shift + avail).min(len);
            let mut view: Vec<char> = cols.cut(shift.min(end), end).chars().collect();
            if shift > 0 {
                view.splice(..3.min(view.len()), "...".chars());
            }
            if end < len {
                let at = view.len().saturating_sub(3);
                view.splice(at.., "...".chars());
            }
            view.into_iter().collect()
        };
        if text.is_empty() {
            format!("{num}\n")
        } else {
            format!("{num} {text}\n")
        }
    }

    /// An underline for display columns `from..to` of a line shown from
    /// `shift`, kept within the width.
    fn mark_row(&self, shift: usize, from: usize, to: usize, mark: &Mark) -> String {
        let from = from.saturating_sub(shift);
        let to = to.saturating_sub(shift).min(self.avail()).max(from + 1);
        self.underline(from, to - from, mark)
    }

    /// The underline row for `mark` on line `line` (from display column
    /// `from`, `len` long), with its label, wrapped when it does not fit.
    fn underline(&self, from: usize, len: usize, mark: &Mark) -> String {
        let (ch, color) = if mark.primary {
            ('^', severity_color(self.f.severity))
        } else {
            ('-', BLUE)
        };
        let marks: String = std::iter::repeat_n(ch, len.max(1)).collect();
        let lead = self.gutter + 3 + from;
        let mut out = format!(
            "{} {}{}",
            self.bar(),
            " ".repeat(from),
            self.p.paint(color, &marks)
        );
        if let Some(text) = mark.text.filter(|t| !t.is_empty()) {
            let after = lead + len.max(1) + 1;
            if after + text.chars().count().min(20) <= self.width {
                let wrapped = wrap(text, self.width, after, after);
                let pad = " ".repeat(after - self.gutter - 2);
                let joined = wrapped.join(&format!("\n{}{pad}", self.bar()));
                out.push(' ');
                out.push_str(&self.p.paint(color, &joined));
            } else {
                // No room beside the marks: the label goes below them.
                let at = (self.gutter + 3).max(lead.min(self.width / 2));
                let pad = " ".repeat(at - self.gutter - 2);
                for l in wrap(text, self.width, at, at) {
                    out.push_str(&format!("\n{}{pad}{}", self.bar(), self.p.paint(color, &l)));
                }
            }
        }
        out.push('\n');
        out
    }

    /// The lines of `mark`'s span with the underline: a single line, or the
    /// first and last lines of a longer span.
    fn block(&self, marks: &[Mark]) -> String {
        let mut out = String::new();
        let first = &marks[0];
        let (start, end) = (first.span.start, first.span.end);
        if end.line <= start.line {
            let cols = self.lines.get(start.line);
            let shift = self.shift(start.line, cols.display_col(start.column));
            out.push_str(&self.source_line(start.line, shift));
            for m in marks {
                let from = cols.display_col(m.span.start.column);
                let to = if m.span.end.line > m.span.start.line {
                    cols.width
                } else {
                    cols.display_col(m.span.end.column)
                };
                out.push_str(&self.mark_row(shift, from, to, m));
            }
            return out;
        }
        // A span over several lines: its first line marked from the start,
        // with the label (where the call is: a long chain's `.map_err(..)`
        // or `.unwrap()` on its last line is not what the label is about),
        // its last line up to the end.
        let cols = self.lines.get(start.line);
        let from = cols.display_col(start.column);
        let to = cols.width;
        let shift = self.shift(start.line, from);
        out.push_str(&self.source_line(start.line, shift));
        out.push_str(&self.mark_row(shift, from, to, first));
        if end.line > start.line + 1 {
            out.push_str(&self.p.paint(BLUE, "...\n"));
        }
        let cols = self.lines.get(end.line);
        let indent = cols.indent + 1;
        let from = cols.display_col(indent);
        let to = cols.display_col(end.column.max(indent + 1));
        let shift = self.shift(end.line, from);
        out.push_str(&self.source_line(end.line, shift));
        out.push_str(&self.mark_row(
            shift,
            from,
            to,
            &Mark {
                span: first.span,
                text: None,
                primary: first.primary,
            },
        ));
        out
    }
}

#[cfg(test)]
pub fn render_one(f: &Finding, text: &str, opts: &Options) -> String {
    render_in(f, &Lines::new(text), opts)
}

/// One finding, shown with the lines of its file.
fn render_in(f: &Finding, lines: &Lines, opts: &Options) -> String {
    let head = format!("{}[{}]", f.severity.as_str(), f.check.as_str());
    let at = (f.span.start.line, f.span.start.column);
    render_headed(&head, f, lines, at, opts.color, opts.width)
}

/// A problem in a file lockaudit reads that is not Rust source (a config,
/// a rule pack), shown as findings are: `error: message`, its place, the
/// line quoted with the value underlined and labelled, and a help.
pub struct Problem<'a> {
    pub path: &'a str,
    /// 1-based line and column of the value in the file.
    pub line: usize,
    pub column: usize,
    pub message: &'a str,
    /// The line as quoted (clipped around the value and escaped), and the
    /// value's byte range in it.
    pub quoted: &'a str,
    pub mark: (usize, usize),
    pub label: &'a str,
    pub help: Option<&'a str>,
}

pub fn render_problem(problem: &Problem, color: bool, width: usize) -> String {
    let line = problem.line.max(1);
    // The quoted line stands at its own line number, so the gutter says
    // where it is in the file.
    let mut text = "\n".repeat(line - 1);
    let base = text.len();
    text.push_str(problem.quoted);
    let pos = |byte: usize| {
        let byte = byte.min(problem.quoted.len());
        let byte = (0..=byte)
            .rev()
            .find(|&i| problem.quoted.is_char_boundary(i))
            .unwrap_or(0);
        crate::source::Pos {
            line,
            column: problem.quoted[..byte].chars().count() + 1,
            offset: base + byte,
        }
    };
    let span = Span {
        start: pos(problem.mark.0),
        end: pos(problem.mark.1.max(problem.mark.0)),
    };
    let mut f = Finding::new(
        crate::vocab::CheckId::ParseError,
        span,
        problem.message.to_string(),
    )
    .label(problem.label.to_string());
    f.severity = Severity::Error;
    f.path = problem.path.to_string();
    f.help = problem.help.map(str::to_string);
    render_headed(
        "error",
        &f,
        &Lines::new(&text),
        (line, problem.column),
        color,
        width,
    )
}

fn render_headed(
    head: &str,
    f: &Finding,
    lines: &Lines,
    at: (usize, usize),
    color: bool,
    width: usize,
) -> String {
    let p = Painter { on: color };
    let width = width.max(40);
    let mut out = String::new();
    let message = wrap(
        &crate::escape::text(&f.message),
        width,
        head.chars().count() + 2,
        4,
    );
    out.push_str(&format!(
        "{}{}\n",
        p.paint(severity_color(f.severity), head),
        p.paint(BOLD, &format!(": {}", join_wrapped(&message, 4)))
    ));
    let path = crate::escape::text(&f.path).into_owned();
    let label = f.label.as_deref().map(crate::escape::text);
    // Each related place with its message, escaped.
    let related: Vec<(&Label, String)> = f
        .labels
        .iter()
        .map(|l| (l, crate::escape::text(&l.message).into_owned()))
        .collect();
    let mut shown = vec![f.span.start.line, f.span.end.line];
    shown.extend(f.labels.iter().map(|l| l.span.start.line));
    shown.extend(f.labels.iter().map(|l| l.span.end.line));
    let gutter = shown.iter().max().copied().unwrap_or(1).to_string().len();
    let s = Snippet {
        f,
        lines,
        gutter,
        width,
        p: &p,
    };
    let pad = " ".repeat(gutter);
    out.push_str(&format!(
        "{pad}{} {path}:{}:{}\n",
        p.paint(BLUE, "-->"),
        at.0,
        at.1
    ));
    if lines.is_empty() {
        out.push_str(&format!("{}\n", s.bar()));
    } else {
        // The finding's own place first, with any related label on the
        // same line; then every other related place in its own snippet.
        let (same, mut other): (Vec<&(&Label, String)>, Vec<_>) =
            related.iter().partition(|(l, _)| {
                f.span.end.line <= f.span.start.line
                    && l.span.start.line == f.span.start.line
                    && l.span.end.line <= l.span.start.line
            });
        let mut marks = vec![Mark {
            span: f.span,
            text: label.as_deref(),
            primary: true,
        }];
        marks.extend(same.iter().map(|(l, text)| Mark {
            span: l.span,
            text: Some(text.as_str()),
            primary: false,
        }));
        out.push_str(&format!("{}\n", s.bar()));
        out.push_str(&s.block(&marks));
        other.sort_by_key(|(l, _)| (l.span.start.line, l.span.start.column));
        for (l, text) in other {
            out.push_str(&format!("{}\n", s.bar()));
            out.push_str(&format!(
                "{pad}{} {path}:{}:{}\n",
                p.paint(BLUE, ":::"),
                l.span.start.line,
                l.span.start.column
            ));
            out.push_str(&format!("{}\n", s.bar()));
            out.push_str(&s.block(&[Mark {
                span: l.span,
                text: Some(text.as_str()),
                primary: false,
            }]));
        }
        out.push_str(&format!("{}\n", s.bar()));
    }
    let mut tail: Vec<(&str, String)> = Vec::new();
    if let Some(h) = &f.help {
        tail.push(("help", crate::escape::lines(h)));
    }
    for n in &f.notes {
        tail.push(("note", crate::escape::lines(n)));
    }
    if let Some(j) = &f.suppressed {
        tail.push((
            "note",
            if j.is_empty() {
                "suppressed in source".to_string()
            } else {
                format!("suppressed in source: {}", crate::escape::text(j))
            },
        ));
    }
    for (kind, text) in tail {
        let lead = gutter + 3 + kind.len() + 2;
        let wrapped = wrap(&text, width, lead, lead);
        out.push_str(&format!(
            "{pad} {} {}: {}\n",
            p.paint(BLUE, "="),
            p.paint(BOLD, kind),
            join_wrapped(&wrapped, lead)
        ));
    }
    out
}

pub fn render(findings: &[Finding], summary: &Summary, opts: &Options) -> String {
    let mut out = String::new();
    // Each file's lines are split and measured once for all its findings.
    let mut files: std::collections::HashMap<&str, Lines> = std::collections::HashMap::new();
    for f in findings.iter().filter(|f| f.suppressed.is_none()) {
        let lines = files.entry(f.path.as_str()).or_insert_with(|| {
            Lines::new(opts.sources.get(&f.path).map(String::as_str).unwrap_or(""))
        });
        out.push_str(&render_in(f, lines, opts));
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

#[cfg(test)]
mod tests {
    use super::wrap;
    use crate::finding::Finding;
    use crate::source::{Pos, Span};
    use crate::vocab::CheckId;

    /// Plain output of the given width, no colour, no summary.
    fn plain(
        sources: &std::collections::HashMap<String, String>,
        width: usize,
    ) -> super::super::Options<'_> {
        super::super::Options {
            color: false,
            width,
            sources,
            quiet: true,
            tty: false,
            changed: None,
            root: None,
        }
    }

    #[test]
    fn a_wide_source_line_is_cut_around_its_span() {
        let line = format!("{}TARGET{}", "a".repeat(150), "b".repeat(100));
        let pos = |column: usize| Pos {
            line: 1,
            column,
            offset: column - 1,
        };
        let mut f = Finding::new(
            CheckId::MissingPurpose,
            Span {
                start: pos(151),
                end: pos(157),
            },
            "m",
        );
        f.path = "x.rs".into();
        let sources = std::collections::HashMap::new();
        let opts = plain(&sources, 60);
        let out = super::render_one(&f, &line, &opts);
        let rows: Vec<&str> = out.lines().collect();
        let src = rows.iter().find(|l| l.starts_with("1 | ")).unwrap();
        let marks = rows.iter().find(|l| l.contains('^')).unwrap();
        assert!(src.chars().count() <= 60, "{src}");
        assert!(src.starts_with("1 | ...") && src.ends_with("..."), "{src}");
        let at = marks.find('^').unwrap();
        assert_eq!(&src[at..at + 6], "TARGET", "{out}");
        assert_eq!(marks.matches('^').count(), 6);
    }

    /// A span over several lines (a call and the `.await?.unwrap()` after
    /// it) carries its label on its first line, where the call is.
    #[test]
    fn the_label_of_a_long_span_stands_on_its_first_line() {
        let text = "let r = client\n    .lock(name)\n    .await\n    .unwrap();\n";
        let at = |line: usize, column: usize| {
            let offset = text
                .split_inclusive('\n')
                .take(line - 1)
                .map(str::len)
                .sum::<usize>()
                + column
                - 1;
            Pos {
                line,
                column,
                offset,
            }
        };
        let mut f = Finding::new(
            CheckId::MissingPurpose,
            Span {
                start: at(2, 6),
                end: at(4, 14),
            },
            "m",
        )
        .label("the call");
        f.path = "x.rs".into();
        let sources = std::collections::HashMap::new();
        let opts = plain(&sources, 80);
        let out = super::render_one(&f, text, &opts);
        let rows: Vec<&str> = out.lines().collect();
        let first = rows.iter().position(|l| l.starts_with("2 | ")).unwrap();
        let last = rows.iter().position(|l| l.starts_with("4 | ")).unwrap();
        assert!(rows[first + 1].contains("^ the call"), "{out}");
        assert!(!rows[last + 1].contains("the call"), "{out}");
    }

    /// The checkpoints give what cleaning the whole line gives.
    #[test]
    fn columns_of_long_lines_agree_with_cleaning_the_whole_line() {
        let line: String = "ab\té\u{1b}😀\u{202e}c".repeat(60);
        let cols = super::Columns::new(&line);
        let cleaned: Vec<char> = super::clean(&line).chars().collect();
        assert_eq!(cols.width, cleaned.len());
        for col in 1..=line.chars().count() + 3 {
            let naive: usize = line.chars().take(col - 1).map(super::width).sum();
            assert_eq!(cols.display_col(col), naive, "{col}");
        }
        for from in (0..cleaned.len() + 2).step_by(7) {
            for len in [0, 1, 5, 40, 200] {
                let to = from + len;
                let naive: String = cleaned
                    .iter()
                    .skip(from)
                    .take(to.saturating_sub(from))
                    .collect();
                assert_eq!(cols.cut(from, to), naive, "{from}..{to}");
            }
        }
    }

    #[test]
    fn wrapping_never_splits_inline_code() {
        let text = "use `set_options(key, token, SetOptions::default())` instead of `set_nx(key, token)` here";
        let lines = wrap(text, 30, 0, 2);
        for l in &lines {
            assert_eq!(l.matches('`').count() % 2, 0, "split code in {l:?}");
        }
        assert!(lines.contains(&"`set_options(key, token, SetOptions::default())`".to_string()));
        assert_eq!(lines.join(" "), text);
    }

    #[test]
    fn wrapping_fills_lines_up_to_the_width() {
        let lines = wrap("aaa bbb ccc ddd", 8, 0, 0);
        assert_eq!(lines, ["aaa bbb", "ccc ddd"]);
        let lines = wrap("aaa bbb ccc", 9, 4, 2);
        assert_eq!(lines, ["aaa", "bbb ccc"]);
    }
}
