//! Escaping of everything printed that came from the audited tree: file
//! names and source text. A checkout is untrusted input, and a name or a
//! string literal holding a newline, a carriage return or an escape
//! sequence could otherwise forge lines of the report, CI annotations
//! (`::error …` at the start of a line), or terminal control sequences.
//!
//! One rule everywhere: control characters (C0, DEL, C1), the Unicode line
//! and paragraph separators and the bidirectional overrides are shown as
//! Rust-style escapes (`\n`, `\r`, `\t`, `\0`, `\x1b`, `\u{202e}`). Paths
//! are also made lossless: bytes that are not UTF-8 are shown as `\xff`.

use std::borrow::Cow;
use std::ffi::OsStr;
use std::fmt::Write as _;
use std::io::Write as _;
use std::path::Path;

/// Whether `c` is shown escaped.
pub fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{061c}' | '\u{200e}' | '\u{200f}' | '\u{2028}' | '\u{2029}' | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
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

/// `s` with every control character escaped; borrowed when nothing is.
pub fn text(s: &str) -> Cow<'_, str> {
    if !s.chars().any(needs_escape) {
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
    Cow::Owned(out)
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

/// A file name, lossless and printable: UTF-8 as is, every other byte as
/// `\xNN`, control characters escaped. Two different names never print
/// alike, as long as the name holds no backslash (printed paths use `/`).
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
pub fn bytes(mut b: &[u8]) -> String {
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
    let _ = err.write_all(text(line).as_bytes());
    let _ = err.write_all(b"\n");
}

/// Writes a block (a rendered diagnostic) to stderr, each line escaped.
pub fn eprint_block(block: &str) {
    let _ = std::io::stderr().lock().write_all(lines(block).as_bytes());
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
    fn invalid_bytes_are_lossless() {
        assert_eq!(bytes(b"\xff.rs"), "\\xff.rs");
        assert_eq!(bytes(b"\xfe.rs"), "\\xfe.rs");
        assert_eq!(bytes("é\n".as_bytes()), "é\\n");
    }
}
