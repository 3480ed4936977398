//! A manifest's text, in any of its formats (JSON, TOML, YAML), to a
//! checked [`Manifest`]: the steps of loading that touch no file.

use serde_json::Value;

use crate::manifest::{self, Manifest};
use crate::problem::FieldProblem;

/// The file extensions a manifest may have, one format each (`yml` is YAML).
pub(crate) const EXTENSIONS: &[&str] = &["json", "toml", "yaml", "yml"];

/// Parses and checks one manifest from its text, exactly as the hub's
/// loader does with each file once it has read it; `format` is the file's
/// extension (`json`, `toml`, `yaml` or `yml`).
///
/// Whatever the text, the answer is the manifest or every problem found
/// (each with its field, message and fix), never a panic. The `command` is
/// not looked up here: that needs the manifest's folder and PATH, which
/// [`load_file`](crate::load_file) and [`load_hub`](crate::load_hub) add.
pub fn parse_manifest(format: &str, text: &str) -> Result<Manifest, Vec<FieldProblem>> {
    let doc = parse_document(format, text).map_err(|problem| vec![problem])?;
    manifest::from_value(&doc)
}

/// Parses a manifest's text by its format into a JSON value, which
/// [`manifest::from_value`] checks field by field whatever the format was.
pub(crate) fn parse_document(format: &str, text: &str) -> Result<Value, FieldProblem> {
    let (parsed, name) = match format {
        "json" => (serde_json::from_str(text).map_err(|e| e.to_string()), "JSON"),
        "toml" => {
            let parsed = toml::from_str::<toml::Value>(text)
                .map_err(|e| e.to_string().trim().to_string())
                .and_then(|v| serde_json::to_value(v).map_err(|e| e.to_string()));
            (parsed, "TOML")
        }
        "yaml" | "yml" => (serde_norway::from_str(text).map_err(|e| e.to_string()), "YAML"),
        other => {
            return Err(FieldProblem::new(
                "",
                format!("unknown manifest format `.{other}`"),
                "name the file .json, .toml, .yaml or .yml",
            ));
        }
    };
    parsed.map_err(|e| FieldProblem::new("", format!("invalid {name}: {e}"), format!("correct the {name} syntax")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const JSON: &str = r#"{"name": "t", "version": "1", "description": "d", "command": "./t",
        "parameters": [{"name": "n", "type": "integer", "default": 3}]}"#;
    const TOML: &str = "name = \"t\"\nversion = \"1\"\ndescription = \"d\"\ncommand = \"./t\"\n\
                        [[parameters]]\nname = \"n\"\ntype = \"integer\"\ndefault = 3\n";
    const YAML: &str = "name: t\nversion: \"1\"\ndescription: d\ncommand: ./t\n\
                        parameters:\n  - {name: n, type: integer, default: 3}\n";

    #[test]
    fn every_format_gives_the_same_manifest() {
        let json = parse_manifest("json", JSON).unwrap();
        assert_eq!(json.parameters[0].default, Some(serde_json::json!(3)));
        for (format, text) in [("toml", TOML), ("yaml", YAML), ("yml", YAML)] {
            assert_eq!(parse_manifest(format, text).unwrap(), json, "{format}");
        }
    }

    /// (format, text, start of the message, fix)
    #[test]
    fn bad_text_is_one_problem_naming_the_format() {
        let cases = [
            ("json", "{\"name\": ", "invalid JSON", "correct the JSON syntax"),
            ("json", "", "invalid JSON", "correct the JSON syntax"),
            ("toml", "name = = 1", "invalid TOML", "correct the TOML syntax"),
            ("yaml", "name: [unclosed", "invalid YAML", "correct the YAML syntax"),
            ("yml", "a: b: c", "invalid YAML", "correct the YAML syntax"),
            ("txt", "name = \"t\"", "unknown manifest format `.txt`", "name the file .json, .toml, .yaml or .yml"),
        ];
        for (format, text, message, fix) in cases {
            let problems = parse_manifest(format, text).unwrap_err();
            assert_eq!(problems.len(), 1, "{format} {text:?}: {problems:?}");
            assert_eq!(problems[0].field, "", "{format} {text:?}");
            assert!(problems[0].message.starts_with(message), "{format} {text:?}: {}", problems[0].message);
            assert_eq!(problems[0].fix, fix, "{format} {text:?}");
        }
    }

    #[test]
    fn a_document_that_parses_is_checked_field_by_field() {
        let problems = parse_manifest("yaml", "name: t\nversion: 1\n").unwrap_err();
        let fields: Vec<&str> = problems.iter().map(|p| p.field.as_str()).collect();
        assert_eq!(fields, ["version", "description", "command"]);
    }
}
