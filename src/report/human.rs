//! `--format human`: rustc-style diagnostics rendered by miette: the
//! offending span, a label, secondary labels, help and notes. Colour only on
//! a terminal or with `--color always`.

use std::fmt;

use miette::{
    Diagnostic, GraphicalReportHandler, GraphicalTheme, LabeledSpan, NamedSource, SourceCode,
};

use super::{stale_lines, summary_line, Options, Summary};
use crate::finding::{Finding, Severity};

struct Rendered<'a> {
    f: &'a Finding,
    src: NamedSource<String>,
    help: Option<String>,
}

impl fmt::Debug for Rendered<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.f.message)
    }
}

impl fmt::Display for Rendered<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.f.message)
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
        let f = self.f;
        fn len(s: &crate::source::Span) -> usize {
            s.len().max(1)
        }
        let primary = LabeledSpan::new_primary_with_span(
            f.label.clone(),
            (f.span.start.offset, len(&f.span)),
        );
        let secondary = f.labels.iter().map(|l| {
            LabeledSpan::new_with_span(Some(l.message.clone()), (l.span.start.offset, len(&l.span)))
        });
        Some(Box::new(std::iter::once(primary).chain(secondary)))
    }
}

pub fn render_one(f: &Finding, text: &str, opts: &Options) -> String {
    let mut help = f.help.clone();
    for n in &f.notes {
        let line = format!("note: {n}");
        help = Some(match help {
            Some(h) => format!("{h}\n{line}"),
            None => line,
        });
    }
    if let Some(j) = &f.suppressed {
        let line = if j.is_empty() {
            "suppressed in source".to_string()
        } else {
            format!("suppressed in source: {j}")
        };
        help = Some(match help {
            Some(h) => format!("{h}\n{line}"),
            None => line,
        });
    }
    let r = Rendered {
        f,
        // miette appends the line and column of the first label itself.
        src: NamedSource::new(&f.path, text.to_string()).with_language("Rust"),
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
    for f in findings.iter().filter(|f| f.suppressed.is_none()) {
        let text = opts.sources.get(&f.path).map(String::as_str).unwrap_or("");
        out.push_str(&render_one(f, text, opts));
        out.push('\n');
    }
    // A suppressed finding is not shown, but a suppression that does not say
    // why is worth a line.
    for f in findings {
        if f.suppressed.as_deref() == Some("") {
            out.push_str(&format!(
                "note: {}:{}:{}: `{}` is suppressed without a reason: say why after the `allow(...)`\n",
                f.path,
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
