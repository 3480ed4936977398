//! `SKILL.md`: front matter between `---` lines, then the instructions.
//!
//! The rules are the open Agent Skills format's: `name` is lowercase
//! letters, digits and hyphens (not at either end, never two in a row), at
//! most 64 characters, and the name of the skill's folder; `description`
//! is non-empty and at most 1024 characters. Other fields (`license`,
//! `allowed-tools`, `metadata`, fields other agents add) are allowed and
//! ignored: clix needs only these two.

use serde_norway::Value;

/// The longest `name` the format allows.
pub const MAX_NAME: usize = 64;
/// The longest `description` the format allows, in characters.
pub const MAX_DESCRIPTION: usize = 1024;

/// What clix reads of a skill's front matter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FrontMatter {
    /// The skill's name: how `skill NAME` calls it.
    pub name: String,
    /// What it does and when to use it, as the model reads it at level 0.
    pub description: String,
}

/// One thing wrong with a `SKILL.md`: what, and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fault {
    /// What is wrong.
    pub what: String,
    /// What to change.
    pub fix: String,
}

fn fault(what: impl Into<String>, fix: impl Into<String>) -> Fault {
    Fault { what: what.into(), fix: fix.into() }
}

/// The front matter of `text`, a `SKILL.md` in the folder `folder`, or
/// every fault found in it.
pub fn parse_skill_md(text: &str, folder: &str) -> Result<FrontMatter, Vec<Fault>> {
    let yaml = front_matter(text).map_err(|f| vec![f])?;
    let doc: Value = serde_norway::from_str(yaml).map_err(|e| {
        vec![fault(
            format!("the front matter is not valid YAML ({e})"),
            "write `key: value` lines between the `---` lines",
        )]
    })?;
    let Value::Mapping(map) = doc else {
        return Err(vec![fault(
            "the front matter is not a set of `key: value` fields",
            "write `name: ...` and `description: ...` between the `---` lines",
        )]);
    };
    let field = |key: &str| map.get(Value::String(key.to_string()));
    let mut faults = Vec::new();
    let name = text_field(field("name"), "name", &mut faults);
    let description = text_field(field("description"), "description", &mut faults);
    if let Some(name) = &name {
        faults.extend(name_faults(name, folder));
    }
    if let Some(description) = &description {
        let chars = description.chars().count();
        if description.trim().is_empty() {
            faults.push(fault("`description` is empty", "say what the skill does and when to use it"));
        } else if chars > MAX_DESCRIPTION {
            faults.push(fault(
                format!("`description` is {chars} characters, more than {MAX_DESCRIPTION}"),
                "shorten it; details belong in the instructions below the front matter",
            ));
        }
    }
    match (name, description) {
        (Some(name), Some(description)) if faults.is_empty() => Ok(FrontMatter { name, description }),
        _ => Err(faults),
    }
}

/// The YAML between the first line `---` and the next one.
fn front_matter(text: &str) -> Result<&str, Fault> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut lines = text.split_inclusive('\n');
    let first = lines.next().unwrap_or("");
    if first.trim_end() != "---" {
        return Err(fault(
            "no front matter: the file does not start with a `---` line",
            "start SKILL.md with `---`, then `name:` and `description:` lines, then `---`",
        ));
    }
    let start = first.len();
    let mut at = start;
    for line in lines {
        if line.trim_end() == "---" {
            return Ok(&text[start..at]);
        }
        at += line.len();
    }
    Err(fault("the front matter has no closing `---` line", "end the front matter with a line `---`"))
}

/// The string at `key`, or a fault when it is missing or not text.
fn text_field(value: Option<&Value>, key: &str, faults: &mut Vec<Fault>) -> Option<String> {
    match value {
        Some(Value::String(s)) => Some(s.clone()),
        None | Some(Value::Null) => {
            faults.push(fault(format!("`{key}` is missing"), format!("add a `{key}:` line to the front matter")));
            None
        }
        Some(_) => {
            faults.push(fault(format!("`{key}` is not text"), format!("write `{key}:` as one line of text")));
            None
        }
    }
}

/// What is wrong with `name` for a skill in the folder `folder`.
fn name_faults(name: &str, folder: &str) -> Vec<Fault> {
    let mut faults = Vec::new();
    let rule = "use lowercase letters, digits and single hyphens, not at either end (like `pdf-tools`)";
    if name.is_empty() {
        faults.push(fault("`name` is empty", rule));
        return faults;
    }
    if name.len() > MAX_NAME {
        faults.push(fault(format!("`name` is {} characters, more than {MAX_NAME}", name.len()), "shorten it"));
    }
    let allowed = name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-');
    if !allowed || name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        faults.push(fault(format!("`name` {name:?} is not a valid skill name"), rule));
    }
    if name != folder {
        faults.push(fault(
            format!("`name` {name:?} is not the folder's name {folder:?}"),
            "name the folder as the skill, or change `name`",
        ));
    }
    faults
}

#[cfg(test)]
mod tests {
    use super::*;

    fn md(front: &str) -> String {
        format!("---\n{front}---\n# Instructions\nDo the thing.\n")
    }

    /// Each rule of the format, as a row: the front matter, and the fault
    /// it gives (`None`: accepted).
    #[test]
    fn front_matter_rules() {
        let long_name = "a".repeat(65);
        let long_desc = "d".repeat(1025);
        let rows: Vec<(String, &str, Option<&str>)> = vec![
            (md("name: pdf\ndescription: Read PDFs.\n"), "pdf", None),
            (
                md("name: pdf-tools-2\ndescription: Read PDFs.\nlicense: MIT\nallowed-tools: Bash\n"),
                "pdf-tools-2",
                None,
            ),
            (md("name: \"quoted\"\ndescription: >\n  Folded\n  text.\n"), "quoted", None),
            ("# no front matter\n".into(), "x", Some("no front matter")),
            ("---\nname: x\ndescription: y\n".into(), "x", Some("no closing `---`")),
            (md("name: [x\n"), "x", Some("not valid YAML")),
            (md("- a\n- b\n"), "x", Some("not a set of `key: value` fields")),
            (md("description: Read PDFs.\n"), "x", Some("`name` is missing")),
            (md("name: x\n"), "x", Some("`description` is missing")),
            (md("name: x\ndescription: \"  \"\n"), "x", Some("`description` is empty")),
            (md(&format!("name: x\ndescription: {long_desc}\n")), "x", Some("more than 1024")),
            (md("name: 12\ndescription: d\n"), "12", Some("`name` is not text")),
            (md("name: PDF\ndescription: d\n"), "PDF", Some("not a valid skill name")),
            (md("name: pdf_tools\ndescription: d\n"), "pdf_tools", Some("not a valid skill name")),
            (md("name: -pdf\ndescription: d\n"), "-pdf", Some("not a valid skill name")),
            (md("name: pdf--x\ndescription: d\n"), "pdf--x", Some("not a valid skill name")),
            (md(&format!("name: {long_name}\ndescription: d\n")), &long_name, Some("more than 64")),
            (md("name: pdf\ndescription: d\n"), "pdf-tools", Some("not the folder's name \"pdf-tools\"")),
        ];
        for (text, folder, want) in rows {
            let got = parse_skill_md(&text, folder);
            match (want, got) {
                (None, Ok(front)) => assert_eq!(front.name, folder, "{text}"),
                (Some(want), Err(faults)) => {
                    let all: Vec<String> = faults.iter().map(|f| format!("{}; {}", f.what, f.fix)).collect();
                    assert!(all.iter().any(|f| f.contains(want)), "{text:?}: want {want:?} in {all:?}");
                    assert!(faults.iter().all(|f| !f.fix.is_empty()), "every fault says what to do: {all:?}");
                }
                (want, got) => panic!("{text:?}: want {want:?}, got {got:?}"),
            }
        }
    }

    #[test]
    fn the_description_is_read_whole() {
        let front = parse_skill_md(&md("name: x\ndescription: >\n  Two\n  lines.\n"), "x").unwrap();
        assert_eq!(front.description, "Two lines.\n");
    }
}
