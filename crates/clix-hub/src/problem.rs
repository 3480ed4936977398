//! One thing wrong with a manifest: where (file, field), what, and the fix.

use std::fmt;
use std::path::PathBuf;

/// A problem found while loading a manifest. It makes only that tool
/// unavailable; the rest of the hub loads.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Problem {
    /// The manifest file (or hub folder) the problem is in.
    pub file: PathBuf,
    /// Dotted path of the field, e.g. `parameters[1].type`; empty for the file as a whole.
    pub field: String,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub fix: String,
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.file.display())?;
        if !self.field.is_empty() {
            write!(f, ": {}", self.field)?;
        }
        write!(f, ": {}", self.message)?;
        if !self.fix.is_empty() {
            write!(f, " (fix: {})", self.fix)?;
        }
        Ok(())
    }
}

/// A problem inside one manifest document, before its file is known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldProblem {
    pub field: String,
    pub message: String,
    pub fix: String,
}

impl FieldProblem {
    pub fn new(field: impl Into<String>, message: impl Into<String>, fix: impl Into<String>) -> Self {
        Self { field: field.into(), message: message.into(), fix: fix.into() }
    }

    /// Attach the file this problem was found in.
    pub fn in_file(self, file: impl Into<PathBuf>) -> Problem {
        Problem { file: file.into(), field: self.field, message: self.message, fix: self.fix }
    }
}

impl fmt::Display for FieldProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.field.is_empty() {
            write!(f, "{}: ", self.field)?;
        }
        write!(f, "{}", self.message)?;
        if !self.fix.is_empty() {
            write!(f, " (fix: {})", self.fix)?;
        }
        Ok(())
    }
}

/// The closest candidate to `word` (edit distance at most 2, or a prefix match).
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let mut best: Option<(usize, &str)> = None;
    for c in candidates {
        let d = edit_distance(word, c);
        let close = d <= 2 || (word.len() >= 3 && (c.starts_with(word) || word.starts_with(c)));
        if close && best.is_none_or(|(bd, _)| d < bd) {
            best = Some((d, c));
        }
    }
    best.map(|(_, c)| c)
}

fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn suggestions() {
        let names = ["timeout_ms", "version", "description"];
        assert_eq!(did_you_mean("timeout", names), Some("timeout_ms"));
        assert_eq!(did_you_mean("verison", names), Some("version"));
        assert_eq!(did_you_mean("zzz", names), None);
    }

    #[test]
    fn display_has_file_field_and_fix() {
        let p =
            FieldProblem::new("parameters[0].type", "unknown type `str`", "use one of: string").in_file("/h/a.json");
        assert_eq!(p.to_string(), "/h/a.json: parameters[0].type: unknown type `str` (fix: use one of: string)");
    }
}
