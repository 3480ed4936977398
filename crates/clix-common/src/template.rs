//! Prompt templates: text with named placeholders, the one syntax of every
//! prompt file clix ships and a person may override (the system prompt in
//! clix-agent, the `run` tool's description in clix-engine).
//!
//! `{name}` (lowercase letters, digits and `_`, starting with a letter) is
//! a placeholder; `{{` is a literal `{`. Every other character is itself,
//! so braces that cannot be a placeholder (`{"command": "ls"}`, awk's
//! `{print $1}`, `${HOME}`) need no escape. A file's last line break is not
//! part of the prompt (editors add one).

use crate::names::UnknownField;

/// A parsed prompt template.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Template {
    parts: Vec<Part>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Text(String),
    Slot(String),
}

impl Template {
    /// `text` read as a template. Never fails: whether its placeholders are
    /// ones the caller fills is [`Template::checked`]'s question.
    pub fn parse(text: &str) -> Template {
        let text = text.strip_suffix('\n').map_or(text, |t| t.strip_suffix('\r').unwrap_or(t));
        let mut parts = Vec::new();
        let mut literal = String::new();
        let mut rest = text;
        while let Some(at) = rest.find('{') {
            literal.push_str(&rest[..at]);
            let after = &rest[at + 1..];
            if let Some(escaped) = after.strip_prefix('{') {
                literal.push('{');
                rest = escaped;
            } else if let Some(name) = slot_name(after) {
                if !literal.is_empty() {
                    parts.push(Part::Text(std::mem::take(&mut literal)));
                }
                parts.push(Part::Slot(name.to_string()));
                rest = &after[name.len() + 1..];
            } else {
                literal.push('{');
                rest = after;
            }
        }
        literal.push_str(rest);
        if !literal.is_empty() {
            parts.push(Part::Text(literal));
        }
        Template { parts }
    }

    /// `text` as a template whose every placeholder is one of `known`, or
    /// each placeholder that is not (in the order written, each once).
    pub fn checked(text: &str, known: &[&str]) -> Result<Template, Vec<UnknownField>> {
        let template = Template::parse(text);
        let mut unknown: Vec<UnknownField> = Vec::new();
        for name in template.placeholders() {
            if !known.contains(&name) && !unknown.iter().any(|u| u.field == name) {
                unknown.push(UnknownField::new(name, known.iter().copied()));
            }
        }
        if unknown.is_empty() { Ok(template) } else { Err(unknown) }
    }

    /// The placeholders, in the order written (repeats included).
    pub fn placeholders(&self) -> impl Iterator<Item = &str> {
        self.parts.iter().filter_map(|p| match p {
            Part::Slot(name) => Some(name.as_str()),
            Part::Text(_) => None,
        })
    }

    /// The text with each placeholder replaced by its value in `values`;
    /// one without a value stays as written.
    pub fn render(&self, values: &[(&str, &str)]) -> String {
        let mut out = String::new();
        for part in &self.parts {
            match part {
                Part::Text(text) => out.push_str(text),
                Part::Slot(name) => match values.iter().find(|(k, _)| k == name) {
                    Some((_, value)) => out.push_str(value),
                    None => {
                        out.push('{');
                        out.push_str(name);
                        out.push('}');
                    }
                },
            }
        }
        out
    }
}

/// What a person writes instead of an unknown placeholder: the near one, or
/// the known ones, and how to write a literal brace.
pub fn unknown_placeholder_message(unknown: &UnknownField) -> String {
    let known: Vec<String> = unknown.known.iter().map(|k| format!("{{{k}}}")).collect();
    let near = unknown.near.as_ref().map(|n| format!("did you mean {{{n}}}? ")).unwrap_or_default();
    format!(
        "unknown placeholder {{{}}}; {near}known placeholders: {} (write {{{{ for a literal {{)",
        unknown.field,
        if known.is_empty() { "none".to_string() } else { known.join(", ") }
    )
}

/// The placeholder name `after` (the text after a `{`) begins with, when it
/// is `name}`.
fn slot_name(after: &str) -> Option<&str> {
    let end = after.find('}')?;
    let name = &after[..end];
    let mut chars = name.chars();
    let first = chars.next()?;
    let valid = first.is_ascii_lowercase() && chars.all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    valid.then_some(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// (template, rendered with workspace = /w)
    #[test]
    fn placeholders_escapes_and_other_braces() {
        let rows = [
            ("in {workspace}.", "in /w."),
            ("{workspace}{workspace}", "/w/w"),
            ("a literal {{workspace}", "a literal {workspace}"),
            ("{{", "{"),
            (
                r#"call {"command": "ls"} or awk '{print $1}' or ${HOME}"#,
                r#"call {"command": "ls"} or awk '{print $1}' or ${HOME}"#,
            ),
            ("{Workspace} {x-y} {} {", "{Workspace} {x-y} {} {"),
            ("unfilled {other}", "unfilled {other}"),
            ("last line\n", "last line"),
            ("two breaks\n\n", "two breaks\n"),
            ("crlf\r\n", "crlf"),
        ];
        for (text, want) in rows {
            assert_eq!(Template::parse(text).render(&[("workspace", "/w")]), want, "{text:?}");
        }
    }

    #[test]
    fn unknown_placeholders_are_each_named_once_with_the_near_one() {
        let known = ["workspace", "tool_guidance"];
        assert!(Template::checked("{workspace} {tool_guidance} {{x}", &known).is_ok());
        let err = Template::checked("{wrkspace} {cwd} {wrkspace}", &known).unwrap_err();
        let names: Vec<&str> = err.iter().map(|u| u.field.as_str()).collect();
        assert_eq!(names, ["wrkspace", "cwd"]);
        assert_eq!(
            unknown_placeholder_message(&err[0]),
            "unknown placeholder {wrkspace}; did you mean {workspace}? known placeholders: {workspace}, \
             {tool_guidance} (write {{ for a literal {)"
        );
        assert!(unknown_placeholder_message(&err[1]).starts_with("unknown placeholder {cwd}; known placeholders:"));
    }
}
