//! Escaping of everything printed that came from the audited tree: file
//! names and source text. A checkout is untrusted input, and a name or a
//! string literal holding a newline, a carriage return or an escape
//! sequence could otherwise forge lines of the report, CI annotations
//! (`::error …` at the start of a line), or terminal control sequences.
//!
//! One rule everywhere: control characters (C0, DEL, C1), the Unicode line
//! and paragraph separators and the bidirectional overrides are shown as
//! Rust-style escapes (`\n`, `\r`, `\t`, `\0`, `\x1b`, `\u{202e}`), and so
//! are zero-width characters. Paths are also made lossless: bytes that are
//! not UTF-8 are shown as `\xff`, a backslash as `\\`.
//!
//! A CI runner also reads workflow commands from its log: `::cmd` at the
//! start of a line (after white space) and the legacy `##[cmd]` (and Azure's
//! `##vso[`) anywhere in one. [`text`] breaks the second `#` of `##[` and
//! `##vso[` (`#\x23[`); [`log`] is the last step of everything written to
//! standard output or standard error, and also breaks a `::` that starts a
//! line (`\x3a:`).

use std::borrow::Cow;
use std::ffi::OsStr;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

/// Whether `c` is shown escaped: control characters, the line and
/// paragraph separators, and every character that is invisible or changes
/// how its neighbours show: Unicode's format characters (zero-width
/// spaces and joiners, bidirectional marks, overrides and isolates, tags)
/// and the rest of its default-ignorable code points (variation
/// selectors, fillers).
pub fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{00ad}'
                | '\u{034f}'
                | '\u{0600}'..='\u{0605}'
                | '\u{061c}'
                | '\u{06dd}'
                | '\u{070f}'
                | '\u{0890}'..='\u{0891}'
                | '\u{08e2}'
                | '\u{115f}'..='\u{1160}'
                | '\u{17b4}'..='\u{17b5}'
                | '\u{180b}'..='\u{180f}'
                | '\u{200b}'..='\u{200f}'
                | '\u{2028}'..='\u{202e}'
                | '\u{2060}'..='\u{206f}'
                | '\u{3164}'
                | '\u{fe00}'..='\u{fe0f}'
                | '\u{feff}'
                | '\u{ffa0}'
                | '\u{fff0}'..='\u{fffb}'
                | '\u{110bd}'
                | '\u{110cd}'
                | '\u{13430}'..='\u{1343f}'
                | '\u{1bca0}'..='\u{1bca3}'
                | '\u{1d173}'..='\u{1d17a}'
                | '\u{e0000}'..='\u{e0fff}'
        )
}

/// Appends the escaped form of one character.
pub fn push_escaped(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        '\0' => out.push_str("\\0"),
        c if (c as u32) < 0x80 => {
            let _ = write!(out, "\\x{:02x}", c as u32);
        }
        c => {
            let _ = write!(out, "\\u{{{:x}}}", c as u32);
        }
    }
}

/// The number of bytes `c` takes once escaped.
pub fn escaped_len(c: char) -> usize {
    if !needs_escape(c) {
        return c.len_utf8();
    }
    let mut s = String::new();
    push_escaped(&mut s, c);
    s.len()
}

/// `s` with every control character escaped, and the legacy workflow
/// command openers `##[` and `##vso[` broken; borrowed when nothing is.
pub fn text(s: &str) -> Cow<'_, str> {
    if !s.chars().any(needs_escape) && !has_legacy_command(s) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if needs_escape(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(break_legacy_commands(&out, "\\x23"))
}

fn has_legacy_command(s: &str) -> bool {
    s.contains("##[") || s.contains("##vso[")
}

/// `s` with the second `#` of every `##[` and `##vso[` written as `hash`.
fn break_legacy_commands(s: &str, hash: &str) -> String {
    if !has_legacy_command(s) {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len() + 8);
    let mut rest = s;
    while let Some(at) = rest.find("##") {
        let after = &rest[at + 2..];
        out.push_str(&rest[..at + 1]);
        if after.starts_with('[') || after.starts_with("vso[") {
            out.push_str(hash);
        } else {
            out.push('#');
        }
        rest = after;
    }
    out.push_str(rest);
    out
}

/// Everything written to standard output or standard error, last: no line
/// starts a workflow command (`::cmd` after white space becomes
/// `\x3a:cmd`) unless `commands` (the `--format github` report, whose
/// commands are lockaudit's own and whose values are percent-escaped), and
/// no `##[` or `##vso[` is left anywhere (`#\x23[`; `#\u0023[` in JSON,
/// which keeps it valid and lossless).
pub fn log(s: &str, commands: bool) -> Cow<'_, str> {
    let json = s.trim_start().starts_with(['{', '[']);
    // A command is `::` and its name (`::error`, `::add-mask`): the
    // `::: path` of a diagnostic's secondary location is none. The runner
    // trims every Unicode white space first (`\u{3000}::error` is one).
    let starts_command = |line: &str| {
        let t = line.trim_start_matches(char::is_whitespace);
        t.starts_with("::") && t[2..].starts_with(|c: char| c.is_ascii_alphabetic())
    };
    let needs_lines = !commands && s.split('\n').any(starts_command);
    if !needs_lines && !has_legacy_command(s) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for (i, line) in s.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        if !commands && starts_command(line) {
            let lead = line.len() - line.trim_start_matches(char::is_whitespace).len();
            out.push_str(&line[..lead]);
            out.push_str(if json { "\\u003a" } else { "\\x3a" });
            out.push_str(&line[lead + 1..]);
        } else {
            out.push_str(line);
        }
    }
    Cow::Owned(break_legacy_commands(
        &out,
        if json { "\\u0023" } else { "\\x23" },
    ))
}

/// Several lines: each line escaped, the line breaks kept (a rendered
/// diagnostic, whose own layout uses newlines).
pub fn lines(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for (i, line) in s.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&text(line));
    }
    out
}

/// Source text shown as it is laid out (the `annotate` diff): each line
/// escaped as [`text`] does, but tabs and the carriage return of a CRLF
/// kept.
pub fn source_lines(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars().peekable();
    while let Some(c) = chars.next() {
        let layout = c == '\t' || c == '\n' || (c == '\r' && chars.peek() == Some(&'\n'));
        if needs_escape(c) && !layout {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    break_legacy_commands(&out, "\\x23")
}

/// A file name, lossless and printable: UTF-8 as is, every other byte as
/// `\xNN`, control characters escaped, a backslash doubled: two different
/// names never print alike.
pub fn os_str(s: &OsStr) -> String {
    #[cfg(unix)]
    {
        use std::os::unix::ffi::OsStrExt;
        bytes(s.as_bytes())
    }
    #[cfg(not(unix))]
    {
        text(&s.to_string_lossy()).into_owned()
    }
}

/// Bytes that should be text (a path from git): as [`os_str`].
pub fn bytes(b: &[u8]) -> String {
    if !b.contains(&b'\\') {
        return bytes_unquoted(b);
    }
    let parts: Vec<String> = b.split(|&c| c == b'\\').map(bytes_unquoted).collect();
    parts.join("\\\\")
}

fn bytes_unquoted(mut b: &[u8]) -> String {
    let mut out = String::with_capacity(b.len());
    loop {
        match std::str::from_utf8(b) {
            Ok(s) => {
                out.push_str(&text(s));
                return out;
            }
            Err(e) => {
                let (good, rest) = b.split_at(e.valid_up_to());
                out.push_str(&text(std::str::from_utf8(good).unwrap_or_default()));
                let bad = e.error_len().unwrap_or(rest.len());
                for byte in &rest[..bad] {
                    let _ = write!(out, "\\x{byte:02x}");
                }
                b = &rest[bad..];
            }
        }
    }
}

/// A path as given, printable (see [`os_str`]).
pub fn path(p: &Path) -> String {
    os_str(p.as_os_str())
}

/// Writes one line to stderr, escaped. A closed or broken stderr is
/// ignored: losing a note must not lose the report.
pub fn eprintln(line: &str) {
    let mut err = std::io::stderr().lock();
    let _ = err.write_all(log(&text(line), false).as_bytes());
    let _ = err.write_all(b"\n");
}

/// Writes a block (a rendered diagnostic) to stderr, each line escaped.
pub fn eprint_block(block: &str) {
    let _ = std::io::stderr()
        .lock()
        .write_all(log(&lines(block), false).as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn controls_are_escaped() {
        assert_eq!(
            text("a\nb\r\t\0\x1b[31m\x7f"),
            "a\\nb\\r\\t\\0\\x1b[31m\\x7f"
        );
        assert_eq!(text("\u{85}\u{202e}é"), "\\u{85}\\u{202e}é");
        assert!(matches!(text("plain/path.rs"), Cow::Borrowed(_)));
        assert_eq!(lines("one\ntwo\x1b"), "one\ntwo\\x1b");
    }

    #[test]
    fn workflow_commands_are_broken() {
        assert_eq!(
            text("src/##[stop-commands]x.rs"),
            "src/#\\x23[stop-commands]x.rs"
        );
        assert_eq!(
            text("a ##vso[task] #[x] ## b"),
            "a #\\x23vso[task] #[x] ## b"
        );
        assert_eq!(
            text("zero\u{200b}width\u{feff}"),
            "zero\\u{200b}width\\u{feff}"
        );
        assert_eq!(log("ok\n  ::error::x\n", false), "ok\n  \\x3a:error::x\n");
        assert_eq!(log("::error file=a::m\n", true), "::error file=a::m\n");
        assert_eq!(log("  ::: src/a.rs:5:25\n", false), "  ::: src/a.rs:5:25\n");
        assert_eq!(
            log("a\n\u{3000}\u{a0} ::warning::x", false),
            "a\n\u{3000}\u{a0} \\x3a:warning::x"
        );
        assert_eq!(
            text("tag\u{e0041}vs\u{fe0f}\u{2066}"),
            "tag\\u{e0041}vs\\u{fe0f}\\u{2066}"
        );
        assert_eq!(
            source_lines("\ta\r\n\x1b[0m\u{200b}##[x]\r"),
            "\ta\r\n\\x1b[0m\\u{200b}#\\x23[x]\\r"
        );
        assert_eq!(
            log("{\"a\": \"##[error]\"}", false),
            "{\"a\": \"#\\u0023[error]\"}"
        );
        assert!(
            serde_json::from_str::<serde_json::Value>(&log("{\"a\": \"##[e]\"}", false)).is_ok()
        );
        assert_eq!(bytes(b"a\\b.rs"), "a\\\\b.rs");
    }

    #[test]
    fn invalid_bytes_are_lossless() {
        assert_eq!(bytes(b"\xff.rs"), "\\xff.rs");
        assert_eq!(bytes(b"\xfe.rs"), "\\xfe.rs");
        assert_eq!(bytes("é\n".as_bytes()), "é\\n");
    }
}
