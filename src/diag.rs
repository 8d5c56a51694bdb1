//! Errors in the user's YAML (rule packs and config), rendered by miette with
//! the file, line and column, a label under the offending value and a hint.
//! Every problem in a file is collected and reported together.

use miette::{Diagnostic, NamedSource, SourceSpan};
use thiserror::Error;

use crate::yamlloc::{self, Loc, Seg};

/// One problem at one place in a YAML file.
#[derive(Debug, Error, Diagnostic)]
#[error("{path}:{line}:{column}: {message}")]
pub struct YamlProblem {
    pub path: String,
    pub line: usize,
    pub column: usize,
    pub message: String,
    #[help]
    pub help: Option<String>,
    #[source_code]
    pub src: NamedSource<String>,
    #[label("{label}")]
    pub span: SourceSpan,
    pub label: String,
}

/// Every problem found in one YAML file.
#[derive(Debug, Error, Diagnostic)]
#[error("{what} {path} is invalid ({} problem{})", problems.len(), if problems.len() == 1 { "" } else { "s" })]
#[diagnostic(code(lockaudit::invalid_yaml))]
pub struct YamlErrors {
    pub what: &'static str,
    pub path: String,
    #[related]
    pub problems: Vec<YamlProblem>,
}

/// Collects problems for one file.
pub struct Collector<'a> {
    pub path: &'a str,
    pub text: &'a str,
    pub problems: Vec<YamlProblem>,
}

impl<'a> Collector<'a> {
    pub fn new(path: &'a str, text: &'a str) -> Self {
        Collector {
            path,
            text,
            problems: Vec::new(),
        }
    }

    /// A problem at the value found at `path` (or the file start).
    pub fn at(&mut self, path: &[Seg], message: impl Into<String>, help: Option<String>) {
        let loc = yamlloc::locate(self.text, path).unwrap_or(Loc {
            line: 1,
            column: 1,
            offset: 0,
        });
        self.at_loc(loc, message, help);
    }

    pub fn at_loc(&mut self, loc: Loc, message: impl Into<String>, help: Option<String>) {
        let message = message.into();
        let len = value_len(self.text, loc.offset);
        self.problems.push(YamlProblem {
            path: self.path.to_string(),
            line: loc.line,
            column: loc.column,
            label: "here".to_string(),
            message,
            help,
            src: NamedSource::new(self.path, self.text.to_string()),
            span: (loc.offset, len).into(),
        });
    }

    /// A problem with a mapping key itself (an unknown key or id): the
    /// marker sits under the key named by the last segment of `path`, not
    /// under its value.
    pub fn at_key(&mut self, path: &[Seg], message: impl Into<String>, help: Option<String>) {
        let key = match path.last() {
            Some(Seg::Key(k)) => k.clone(),
            _ => return self.at(path, message, help),
        };
        let found = yamlloc::locate(self.text, path)
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
        let offset = offset.min(self.text.len());
        let before = &self.text[..offset];
        let line = before.matches('\n').count() + 1;
        let column = before.rsplit('\n').next().unwrap_or("").chars().count() + 1;
        self.problems.push(YamlProblem {
            path: self.path.to_string(),
            line,
            column,
            label: "here".to_string(),
            message: message.into(),
            help,
            src: NamedSource::new(self.path, self.text.to_string()),
            span: (offset, len.max(1)).into(),
        });
    }

    /// A `yaml_serde` error (syntax, unknown field, wrong type). An unknown
    /// field or value gets the closest expected one as a suggestion.
    pub fn serde(&mut self, err: &yaml_serde::Error, help: Option<String>) {
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
        if self.problems.is_empty() {
            Ok(())
        } else {
            Err(YamlErrors {
                what,
                path: self.path.to_string(),
                problems: self.problems,
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
