//! The single `run` tool, described from the catalog.
//!
//! The description is paid for on every model call, so it stays compact: a
//! line per agent command, one line on the standard commands (a few named,
//! `help` lists them all), the output conventions, and where to get more.
//! Its order is stable (sorted), so a provider's prompt cache keeps hitting.
//! Its wording is a text file, `prompts/run-tool.md` ([`RUN_TOOL_PROMPT`]).

use clix_common::template::Template;
use serde_json::{Value, json};

use crate::catalog::Catalog;

/// The wire shape a caller needs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ToolFormat {
    /// Chat Completions `tools[]` entry.
    OpenAi,
    /// Messages API `tools[]` entry.
    Anthropic,
    /// MCP `tools/list` entry.
    Mcp,
}

/// The built-in text of the `run` tool's description
/// (`crates/clix-engine/prompts/run-tool.md`), a template whose
/// placeholders are the catalog's command list (`{commands}`), its
/// skills' level-0 list (`{skills}`, empty without skills) and its MCP
/// servers (`{mcp}`, empty without servers). A person's
/// `prompts/run-tool.md` replaces it ([`Catalog::run_tool_prompt`]).
pub const RUN_TOOL_PROMPT: &str = include_str!("../prompts/run-tool.md");

/// The placeholders of the `run` tool's description.
pub const RUN_TOOL_PLACEHOLDERS: &[&str] = &["commands", "skills", "mcp"];

/// The description text of the `run` tool: its template (the catalog's,
/// else the built-in) with the commands filled in.
pub fn description(catalog: &Catalog) -> String {
    let builtin;
    let template = match &catalog.run_tool_prompt {
        Some(template) => template,
        None => {
            builtin = Template::parse(RUN_TOOL_PROMPT);
            &builtin
        }
    };
    template.render(&[("commands", &commands(catalog)), ("skills", &skills(catalog)), ("mcp", &mcp(catalog))])
}

/// The `{mcp}` of the description: nothing without servers, else one line
/// per server (name and description) on lines of their own.
fn mcp(catalog: &Catalog) -> String {
    match catalog.placeholder("mcp").trim_end() {
        "" => String::new(),
        section => format!("\n{section}"),
    }
}

/// The `{skills}` of the description: nothing without skills, else the
/// level-0 list on lines of its own after the line before it.
fn skills(catalog: &Catalog) -> String {
    match catalog.placeholder("skills").trim_end() {
        "" => String::new(),
        list => format!("\n{list}"),
    }
}

/// The `{commands}` of the description: a line per agent command, the
/// capabilities' sections (the hub's tools, clip's environments), and the
/// standard commands in one line.
fn commands(catalog: &Catalog) -> String {
    let width = catalog.agent.iter().map(|s| s.name.len()).max().unwrap_or(0);
    let mut text = String::new();
    for spec in &catalog.agent {
        text.push_str(&format!("  {:width$}  {}\n", spec.name, spec.summary));
    }
    for section in &catalog.sections {
        text.push_str(section);
    }
    text.push_str(&standard_line(&catalog.standard));
    text
}

/// Standard commands every model expects of a shell: named as examples.
const USUAL: &[&str] =
    &["grep", "sed", "awk", "find", "sort", "uniq", "cut", "tr", "head", "tail", "wc", "xargs", "diff", "tar"];

/// Standard commands a model would not assume a shell has: named outright.
const NOTABLE: &[&str] =
    &["jq", "yq", "tomlq", "csv", "json", "rg", "parallel", "retry", "template", "semver", "dotenv", "envsubst"];

/// The standard commands in one short line: a few usual ones as examples,
/// the unusual ones by name, and that `help` lists them all. The whole list (215
/// names, 1.5 KB) was a third of every model call's tool definition, and
/// led Qwen2.5-Coder-1.5B to call `csv` as a tool of its own (docs/eval.md).
fn standard_line(standard: &[String]) -> String {
    let present = |names: &[&'static str]| -> Vec<&'static str> {
        names.iter().copied().filter(|n| standard.iter().any(|s| s == n)).collect()
    };
    format!(
        "Standard commands: bash builtins and the usual Unix tools ({} …), also {}; `help` lists them all.",
        present(USUAL).join(" "),
        present(NOTABLE).join(" ")
    )
}

fn input_schema() -> Value {
    json!({
        "type": "object",
        "properties": {
            "command": {
                "type": "string",
                "description": "The command line to run, e.g. `ls -la | head -20`."
            },
            "stdin": {
                "type": "string",
                "description": "Optional text fed to the command line's standard input."
            }
        },
        "required": ["command"],
        "additionalProperties": false
    })
}

/// The `run` tool in the given wire format.
pub fn tool_definition(catalog: &Catalog, format: ToolFormat) -> Value {
    let description = description(catalog);
    match format {
        ToolFormat::OpenAi => json!({
            "type": "function",
            "function": {"name": "run", "description": description, "parameters": input_schema()}
        }),
        ToolFormat::Anthropic => {
            json!({"name": "run", "description": description, "input_schema": input_schema()})
        }
        ToolFormat::Mcp => {
            json!({"name": "run", "description": description, "inputSchema": input_schema()})
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The built-in text fills every placeholder; a catalog's own template
    /// replaces it, with the same commands.
    #[test]
    fn the_description_is_its_template_with_the_commands() {
        let mut catalog = Catalog { standard: vec!["grep".into(), "jq".into()], ..Catalog::default() };
        let builtin = description(&catalog);
        assert!(builtin.starts_with("Run a command line") && !builtin.contains("{commands}"), "{builtin}");
        assert!(builtin.contains("Standard commands: bash builtins and the usual Unix tools (grep …), also jq;"));
        catalog.run_tool_prompt = Some(Template::parse("Mine.\n{commands}\n"));
        assert_eq!(description(&catalog), format!("Mine.\n{}", commands(&catalog)));
    }
}
