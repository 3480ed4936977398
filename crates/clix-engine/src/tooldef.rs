//! The single `run` tool, described from the catalog.
//!
//! The description is paid for on every model call, so it stays compact: a
//! line per agent command, one line on the standard commands (a few named,
//! `help` lists them all), the output conventions, and where to get more.
//! Its order is stable (sorted), so a provider's prompt cache keeps hitting.

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

/// The description text of the `run` tool.
pub fn description(catalog: &Catalog) -> String {
    let width = catalog.agent.iter().map(|s| s.name.len()).max().unwrap_or(0);
    let mut text = String::from(
        "Run a command line in a bash-compatible shell whose working directory is the \
         user's workspace. One call can be a whole workflow: pipes (|), && || ;, \
         redirections, variables, loops, $( ), globs and heredocs all work, e.g. \
         `cat app.log | grep ERROR | wc -l`. cd and variables persist between calls.\n\n\
         Agent commands:\n",
    );
    for spec in &catalog.agent {
        text.push_str(&format!("  {:width$}  {}\n", spec.name, spec.summary));
    }
    text.push_str(&catalog.hub_section());
    text.push_str(&catalog.clip_section());
    text.push_str(&standard_line(&catalog.standard));
    text.push_str(
        "\n\nOutput: stdout, then stderr as [stderr] lines, then a last line \
         [exit:N | duration] (0 ok, 1 error, 2 usage, 124 timed out, 127 unknown command); \
         it names a failed pipeline stage the code hides: [exit:0 | jq exit 5 | 4ms]. \
         Output over 200 lines or 50KB is shown as its first and last lines plus the path \
         of a file holding all of it; explore that file with grep -n or tail. Binary output \
         is never shown (exit 1); the error says what to use instead.\n\
         More: help, help <command>, <command> --help.",
    );
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
