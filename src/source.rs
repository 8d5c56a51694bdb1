//! Source files as the pipeline sees them: the text, its path as printed, and
//! a line index that converts between byte offsets and 1-based line/column
//! positions. Columns are counted in characters, as rustc and editors do.

/// A position in a file: 1-based line, 1-based character column, byte offset.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Pos {
    pub line: usize,
    pub column: usize,
    pub offset: usize,
}

/// A half-open range of source text.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Default)]
pub struct Span {
    pub start: Pos,
    pub end: Pos,
}

impl Span {
    /// Line 1, column 1.
    pub fn default_at_start() -> Span {
        let p = Pos {
            line: 1,
            column: 1,
            offset: 0,
        };
        Span { start: p, end: p }
    }

    pub fn len(&self) -> usize {
        self.end.offset.saturating_sub(self.start.offset)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn contains(&self, other: &Span) -> bool {
        self.start.offset <= other.start.offset && other.end.offset <= self.end.offset
    }
}

/// One file's text with a line index.
pub struct SourceFile {
    /// Path relative to the current directory, with `/` separators.
    pub path: String,
    pub text: String,
    line_starts: Vec<usize>,
    /// Lines that hold only ASCII, where a column is a byte offset: keeps
    /// positions O(1) on a megabyte-long generated line.
    ascii_lines: Vec<bool>,
}

impl SourceFile {
    pub fn new(path: impl Into<String>, text: impl Into<String>) -> Self {
        let text = text.into();
        let mut line_starts = vec![0];
        let mut ascii_lines = Vec::new();
        let mut ascii = true;
        for (i, b) in text.bytes().enumerate() {
            if b == b'\n' {
                line_starts.push(i + 1);
                ascii_lines.push(ascii);
                ascii = true;
            } else if b >= 0x80 {
                ascii = false;
            }
        }
        ascii_lines.push(ascii);
        SourceFile {
            path: path.into(),
            text,
            line_starts,
            ascii_lines,
        }
    }

    pub fn line_count(&self) -> usize {
        self.line_starts.len()
    }

    /// The text of a 1-based line, without its line ending.
    pub fn line_text(&self, line: usize) -> &str {
        if line == 0 || line > self.line_starts.len() {
            return "";
        }
        let start = self.line_starts[line - 1];
        let end = self
            .line_starts
            .get(line)
            .copied()
            .unwrap_or(self.text.len());
        self.text[start..end].trim_end_matches(['\n', '\r'])
    }

    /// Position of a byte offset (clamped to the text and to a char boundary).
    pub fn pos_of_offset(&self, offset: usize) -> Pos {
        let mut offset = offset.min(self.text.len());
        while !self.text.is_char_boundary(offset) {
            offset -= 1;
        }
        let line_idx = match self.line_starts.binary_search(&offset) {
            Ok(i) => i,
            Err(i) => i - 1,
        };
        let start = self.line_starts[line_idx];
        let column = if self.ascii_lines[line_idx] {
            offset - start + 1
        } else {
            self.text[start..offset].chars().count() + 1
        };
        Pos {
            line: line_idx + 1,
            column,
            offset,
        }
    }

    /// Position from proc-macro2's line (1-based) and column (0-based, in chars).
    pub fn pos_of_line_col(&self, line: usize, col0: usize) -> Pos {
        if line == 0 || line > self.line_starts.len() {
            return self.pos_of_offset(self.text.len());
        }
        let start = self.line_starts[line - 1];
        let line_text = self.line_text(line);
        if self.ascii_lines[line - 1] {
            let byte_in_line = col0.min(line_text.len());
            return Pos {
                line,
                column: col0 + 1,
                offset: start + byte_in_line,
            };
        }
        let byte_in_line = line_text
            .char_indices()
            .nth(col0)
            .map(|(b, _)| b)
            .unwrap_or(line_text.len());
        Pos {
            line,
            column: col0 + 1,
            offset: start + byte_in_line,
        }
    }

    /// Converts a `proc_macro2::Span` (with `span-locations`) into a [`Span`].
    pub fn span_of(&self, span: proc_macro2::Span) -> Span {
        let s = span.start();
        let e = span.end();
        Span {
            start: self.pos_of_line_col(s.line, s.column),
            end: self.pos_of_line_col(e.line, e.column),
        }
    }

    /// The span of anything that has tokens.
    pub fn span_of_node(&self, node: &impl syn::spanned::Spanned) -> Span {
        self.span_of(node.span())
    }

    pub fn snippet(&self, span: &Span) -> &str {
        let s = span.start.offset.min(self.text.len());
        let e = span.end.offset.clamp(s, self.text.len());
        &self.text[s..e]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_count_characters_not_bytes() {
        let f = SourceFile::new("a.rs", "let é = 1;\nlet ключ = x;\n");
        let p = f.pos_of_offset(f.text.find("x").unwrap());
        assert_eq!((p.line, p.column), (2, 12));
        let q = f.pos_of_line_col(2, 11);
        assert_eq!(q.offset, f.text.find("x").unwrap());
        assert_eq!(f.line_text(1), "let é = 1;");
    }
}
