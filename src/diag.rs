//! Errors in the user's YAML (rule packs and config), with the file, line
//! and column, a label under the offending value and a hint, rendered as
//! findings are (rustc's style). Every problem in a file is collected and
//! reported together.

use thiserror::Error;

use crate::yamlloc::{self, Loc, Seg};

/// One problem at one place in a YAML file.
#[derive(Debug, Error)]
#[error("{path}:{line}:{column}: {message}")]
pub struct YamlProblem {
    pub path: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
    pub help: Option<String>,
    /// The line quoted, with the value marked.
    pub src: Excerpt,
    pub label: String,
}

impl YamlProblem {
    /// This problem as findings are shown: `error: message`, ` --> place`,
    /// the quoted line with the value underlined, `= help: …`.
    pub fn render(&self, color: bool, width: usize) -> String {
        let (start, len) = self.src.span;
        crate::report::human::render_problem(
            &crate::report::human::Problem {
                path: &self.src.name,
                line: self.line,
                column: self.column,
                message: &self.message,
                quoted: &self.src.text,
                mark: (start, start + len),
                label: &self.label,
                help: self.help.as_deref(),
            },
            color,
            width,
        )
    }
}

/// Every problem found in one YAML file.
#[derive(Debug, Error)]
#[error("{what} {path} is invalid ({})", count(problems.len(), *omitted))]
pub struct YamlErrors {
    pub what: &'static str,
    pub path: String,
    pub problems: Vec<YamlProblem>,
    /// Problems past [`MAX_PROBLEMS`], counted and not shown.
    pub omitted: usize,
}

fn count(shown: usize, omitted: usize) -> String {
    let n = shown + omitted;
    let s = if n == 1 { "" } else { "s" };
    if omitted == 0 {
        format!("{n} problem{s}")
    } else {
        format!("{n} problem{s}, the first {shown} shown")
    }
}

/// Most problems shown for one file: each is located in the file, which
/// costs a pass over it, so the rest are only counted (the run stays
/// linear in the file, however many problems it holds).
pub const MAX_PROBLEMS: usize = 100;

/// Collects problems for one file.
pub struct Collector<'a> {
    pub path: &'a str,
    pub text: &'a str,
    pub problems: Vec<YamlProblem>,
    /// A config in a `Cargo.toml` table at this path: paths are looked up
    /// in the TOML under it, not in YAML.
    toml_table: Option<Vec<Seg>>,
    omitted: usize,
}

impl<'a> Collector<'a> {
    pub fn new(path: &'a str, text: &'a str) -> Self {
        Collector {
            path,
            text,
            problems: Vec::new(),
            toml_table: None,
            omitted: 0,
        }
    }

    /// Problems of the config in the TOML table at `table` of a manifest.
    pub fn toml(path: &'a str, text: &'a str, table: Vec<Seg>) -> Self {
        Collector {
            toml_table: Some(table),
            ..Collector::new(path, text)
        }
    }

    /// Where the value at `path` starts.
    pub fn locate(&self, path: &[Seg]) -> Option<Loc> {
        match &self.toml_table {
            None => yamlloc::locate(self.text, path),
            Some(table) => {
                let full: Vec<Seg> = table.iter().chain(path).cloned().collect();
                crate::config::manifest::locate(self.text, &full)
            }
        }
    }

    /// A TOML deserialisation error (an unknown key, a wrong type) at its
    /// byte range; an unknown key or value gets the closest expected one.
    pub fn toml_error(
        &mut self,
        message: &str,
        span: Option<std::ops::Range<usize>>,
        help: Option<String>,
    ) {
        let message = message.trim().to_string();
        let help = match (suggest_expected(&message), help) {
            (Some(s), Some(h)) => Some(format!("{s} {h}")),
            (Some(s), None) => Some(s),
            (None, h) => h,
        };
        match span {
            Some(r) => {
                let end = r.end.min(self.text.len());
                let line_end = self.text[r.start.min(end)..end]
                    .find('\n')
                    .map_or(end, |i| r.start + i);
                self.at_span(r.start, line_end.saturating_sub(r.start), message, help)
            }
            None => self.at(&[], message, help),
        }
    }

    /// How many problems were found (shown or not).
    pub fn count(&self) -> usize {
        self.problems.len() + self.omitted
    }

    /// Whether no more problems are shown (the next ones are only
    /// counted): a caller skips the work of locating them.
    pub fn is_full(&self) -> bool {
        self.problems.len() >= MAX_PROBLEMS
    }

    /// Whether no more problems are shown: then one is only counted.
    fn full(&mut self) -> bool {
        let full = self.problems.len() >= MAX_PROBLEMS;
        if full {
            self.omitted += 1;
        }
        full
    }

    /// A problem at the value found at `path` (or the file start).
    pub fn at(&mut self, path: &[Seg], message: impl Into<String>, help: Option<String>) {
        if self.full() {
            return;
        }
        let loc = self.locate(path).unwrap_or(Loc {
            line: 1,
            column: 1,
            offset: 0,
        });
        self.at_loc(loc, message, help);
    }

    pub fn at_loc(&mut self, loc: Loc, message: impl Into<String>, help: Option<String>) {
        if self.problems.len() >= MAX_PROBLEMS {
            self.omitted += 1;
            return;
        }
        let message = clip(message.into());
        let len = value_len(self.text, loc.offset);
        let src = Excerpt::new(self.path, self.text, loc, len);
        self.problems.push(YamlProblem {
            path: self.path.to_string(),
            line: loc.line,
            column: loc.column,
            label: "here".to_string(),
            message,
            help,
            src,
        });
    }

    /// A problem with a mapping key itself (an unknown key or id): the
    /// marker sits under the key named by the last segment of `path`, not
    /// under its value.
    pub fn at_key(&mut self, path: &[Seg], message: impl Into<String>, help: Option<String>) {
        if self.full() {
            return;
        }
        let key = match path.last() {
            Some(Seg::Key(k)) => k.clone(),
            _ => return self.at(path, message, help),
        };
        let found = self
            .locate(path)
            .and_then(|value| key_before(self.text, value.offset, &key));
        match found {
            Some((offset, len)) => self.at_span(offset, len, message, help),
            None => self.at(path, message, help),
        }
    }

    /// A problem at byte `offset`, marking `len` bytes.
    pub fn at_span(
        &mut self,
        offset: usize,
        len: usize,
        message: impl Into<String>,
        help: Option<String>,
    ) {
        if self.full() {
            return;
        }
        let offset = offset.min(self.text.len());
        let before = &self.text[..offset];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
        let loc = Loc {
            line,
            column,
            offset,
        };
        let src = Excerpt::new(self.path, self.text, loc, len.max(1));
        self.problems.push(YamlProblem {
            path: self.path.to_string(),
            line,
            column,
            label: "here".to_string(),
            message: clip(message.into()),
            help,
            src,
        });
    }

    /// A `yaml_serde` error (syntax, unknown field, wrong type). An unknown
    /// field or value gets the closest expected one as a suggestion.
    pub fn serde(&mut self, err: &yaml_serde::Error, help: Option<String>) {
        if self.full() {
            return;
        }
        let loc = yamlloc::error_loc(err).unwrap_or_default();
        let loc = Loc {
            line: loc.line.max(1),
            column: loc.column.max(1),
            offset: loc.offset,
        };
        let message = yamlloc::message(err);
        let help = match (suggest_expected(&message), help) {
            (Some(s), Some(h)) => Some(format!("{s} {h}")),
            (Some(s), None) => Some(s),
            (None, h) => h,
        };
        // An unknown field is marked under the key alone.
        let field = message
            .split_once("unknown field `")
            .and_then(|(_, rest)| rest.split_once('`'))
            .map(|(name, _)| name);
        match field {
            Some(name)
                if self
                    .text
                    .get(loc.offset..)
                    .is_some_and(|t| t.starts_with(name)) =>
            {
                self.at_span(loc.offset, name.len(), message, help)
            }
            _ => self.at_loc(loc, message, help),
        }
    }

    pub fn finish(self, what: &'static str) -> Result<(), YamlErrors> {
        if self.count() == 0 {
            Ok(())
        } else {
            Err(YamlErrors {
                what,
                path: self.path.to_string(),
                problems: self.problems,
                omitted: self.omitted,
            })
        }
    }
}

/// Where key `name` is written before byte `value` (its value's start):
/// the offset and length of the key, quotes included.
fn key_before(text: &str, value: usize, name: &str) -> Option<(usize, usize)> {
    let head = &text[..value.min(text.len())];
    [format!("\"{name}\""), format!("'{name}'"), name.to_string()]
        .into_iter()
        .filter_map(|k| head.rfind(&k).map(|i| (i, k.len())))
        .max_by_key(|(i, len)| i + len)
}

/// "did you mean `x`?" for serde's "unknown field `y`, expected one of `a`,
/// `b`" (or "unknown variant"), when one expected name is close.
fn suggest_expected(message: &str) -> Option<String> {
    let rest = message
        .split_once("unknown field `")
        .or_else(|| message.split_once("unknown variant `"))?
        .1;
    let (word, rest) = rest.split_once('`')?;
    let expected: Vec<&str> = rest.split('`').skip(1).step_by(2).collect();
    crate::suggest::closest(word, expected).map(|c| format!("did you mean `{c}`?"))
}

/// Length of the scalar (or line remainder) starting at `offset`, for the label.
fn value_len(text: &str, offset: usize) -> usize {
    let rest = &text[offset.min(text.len())..];
    let line = rest.lines().next().unwrap_or("");
    let trimmed = line.trim_end();
    let len = match trimmed.find(" #") {
        Some(i) => i,
        None => trimmed.len(),
    };
    len.max(1).min(rest.len().max(1))
}

/// Longest stretch of a YAML line quoted in an error, in bytes.
const MAX_QUOTED: usize = 160;

/// The one line of a YAML file an error quotes (clipped around the value
/// and escaped): a problem never shows more of a file than that, whatever
/// the file holds. Line and column are the file's own.
#[derive(Debug)]
pub struct Excerpt {
    name: String,
    text: String,
    /// The value's byte range in `text`: start and length.
    span: (usize, usize),
}

impl Excerpt {
    fn new(name: &str, text: &str, loc: Loc, len: usize) -> Excerpt {
        let at = floor(text, loc.offset);
        let line_start = text[..at].rfind('\n').map_or(0, |i| i + 1);
        let line_end = text[at..].find('\n').map_or(text.len(), |i| at + i);
        let start = floor(text, at.saturating_sub(MAX_QUOTED / 2).max(line_start));
        let end = floor(text, (start + MAX_QUOTED).min(line_end).max(at));
        let mut quoted = String::new();
        if start > line_start {
            quoted.push('…');
        }
        let before = crate::escape::text(&text[start..at]);
        let value_start = quoted.len() + before.len();
        quoted.push_str(&before);
        let value_end_raw = floor(text, (at + len).min(end));
        let value = crate::escape::text(&text[at..value_end_raw]);
        let value_len = value.len();
        quoted.push_str(&value);
        quoted.push_str(&crate::escape::text(&text[value_end_raw..end]));
        if end < line_end {
            quoted.push('…');
        }
        Excerpt {
            name: crate::escape::text(name).into_owned(),
            text: quoted,
            span: (value_start, value_len),
        }
    }
}

fn floor(text: &str, mut i: usize) -> usize {
    i = i.min(text.len());
    while !text.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// Longest message kept: a message quotes values, and a value may be huge.
const MAX_MESSAGE: usize = 400;

fn clip(mut message: String) -> String {
    if message.len() > MAX_MESSAGE {
        let cut = floor(&message, MAX_MESSAGE);
        message.truncate(cut);
        message.push('…');
    }
    message
}

/// Prints every problem of a YAML file, each with its file, line and
/// column, under one headline, in the findings' style.
pub fn print_yaml_errors(e: &YamlErrors) {
    // As cargo colours its errors: anstream's choice for standard error.
    let color = anstream::AutoStream::choice(&std::io::stderr()) != anstream::ColorChoice::Never;
    crate::escape::eprint_block(&render_yaml_errors(e, color));
}

/// [`print_yaml_errors`]' text, coloured or not.
pub fn render_yaml_errors(e: &YamlErrors, color: bool) -> String {
    let mut out = format!("error: {}\n", crate::escape::text(&e.to_string()));
    let mut problems: Vec<_> = e.problems.iter().collect();
    problems.sort_by_key(|p| (p.line, p.column));
    for p in problems {
        out.push('\n');
        out.push_str(&p.render(color, 100));
    }
    out
}
