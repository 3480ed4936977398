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

/// A problem inside one manifest document, before its file is known
/// (what [`parse_manifest`](crate::parse_manifest) answers).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldProblem {
    /// Dotted path of the field, e.g. `parameters[1].type`; empty for the document as a whole.
    pub field: String,
    /// What is wrong.
    pub message: String,
    /// How to fix it.
    pub fix: String,
}

impl FieldProblem {
    pub(crate) fn new(field: impl Into<String>, message: impl Into<String>, fix: impl Into<String>) -> Self {
        Self { field: field.into(), message: message.into(), fix: fix.into() }
    }

    /// Attach the file this problem was found in.
    pub(crate) fn in_file(self, file: impl Into<PathBuf>) -> Problem {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn display_has_file_field_and_fix() {
        let p =
            FieldProblem::new("parameters[0].type", "unknown type `str`", "use one of: string").in_file("/h/a.json");
        assert_eq!(p.to_string(), "/h/a.json: parameters[0].type: unknown type `str` (fix: use one of: string)");
    }
}
