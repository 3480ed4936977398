//! What the engine can run, as models and `help` see it.

use std::sync::{Arc, OnceLock};

use clix_command::{CommandSpec, LISTED_AT_MOST};
use clix_mcp_client::ListedTool;

/// The names and summaries of every command a session can run.
///
/// Built once the session exists (bashkit's builtin list is only known then)
/// and shared with the commands that print it (`help`, unknown-command errors).
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    /// Our commands, sorted by name.
    pub agent: Vec<CommandSpec>,
    /// Our commands that run but are not offered to the model (`hub`
    /// without ready tools, a capability's command it does not offer):
    /// `help` still answers for them, since a person's docs name them.
    pub unlisted: Vec<CommandSpec>,
    /// The standard Unix commands and shell builtins, sorted.
    pub standard: Vec<String>,
    /// The tools the capabilities' sections list (each ready hub tool,
    /// most used first), in order: the unknown-command error names the
    /// first [`LISTED_AT_MOST`].
    pub tools: Vec<CommandSpec>,
    /// The capabilities' names that are not commands here (a hub tool that
    /// is not ready), each with the error a call of it gets instead of
    /// "unknown command".
    pub unavailable: Vec<(String, String)>,
    /// Lines every unknown-command error ends with (manifests that did not
    /// load, and where to see why).
    pub unknown_hints: Vec<String>,
    /// The capabilities' sections, shown after the commands in the `run`
    /// description and in `help` (clip's environments), in their order.
    pub sections: Vec<String>,
    /// The capabilities' texts for placeholders of the `run` description
    /// (`skills`: the level-0 list within the `[skills]` budget).
    pub placeholders: Vec<(&'static str, String)>,
    /// The MCP servers that are commands, in the config's order (each
    /// spec's summary is the entry's description).
    pub mcp: Vec<CommandSpec>,
    /// The servers' tools known without starting them (kept from an
    /// earlier session), each with its server's name.
    pub mcp_tools: Vec<(String, ListedTool)>,
    /// MCP servers that are not commands, with why (a name taken).
    pub mcp_not_commands: Vec<(String, String)>,
    /// The `run` tool's description template (a person's
    /// `prompts/run-tool.md`); `None`: the built-in one.
    pub run_tool_prompt: Option<clix_common::template::Template>,
}

impl Catalog {
    /// The text a capability gave for `placeholder`, empty when none did.
    pub fn placeholder(&self, placeholder: &str) -> &str {
        self.placeholders.iter().find(|(name, _)| *name == placeholder).map_or("", |(_, text)| text.as_str())
    }

    /// Every runnable name, sorted.
    pub fn all_names(&self) -> Vec<String> {
        let mut names: Vec<String> = self
            .agent
            .iter()
            .chain(&self.tools)
            .chain(&self.mcp)
            .map(|s| s.name.clone())
            .chain(self.standard.iter().cloned())
            .collect();
        names.sort_unstable();
        names.dedup();
        names
    }

    /// One of our commands (listed or not), a capability's tool or an MCP server.
    pub fn agent_command(&self, name: &str) -> Option<&CommandSpec> {
        self.agent.iter().chain(&self.unlisted).chain(&self.tools).chain(&self.mcp).find(|s| s.name == name)
    }
}

impl Catalog {
    /// The MCP servers section of the `run` description and of `help`,
    /// empty without servers: one line per server, never its tools (they
    /// are only known once it runs, and many servers have dozens).
    pub fn mcp_section(&self) -> String {
        if self.mcp.is_empty() {
            return String::new();
        }
        let width = self.mcp.iter().map(|s| s.name.len()).max().unwrap_or(0);
        let mut text = String::from(
            "MCP servers (each a command: <server> --help lists its tools, <server> <tool> --help its flags; \
             structured results are JSON):\n",
        );
        // Their tools too while few are known (seed 001, as for the hub),
        // so the first call can be the right one: how each is called and
        // the shape of its result, so one line can call it and filter the
        // result. Known from an earlier session's list, never by starting
        // a server for a description.
        let tools = if self.mcp_tools.len() <= LISTED_AT_MOST { self.mcp_tools.as_slice() } else { &[] };
        for spec in &self.mcp {
            text.push_str(&format!("  {:width$}  {}\n", spec.name, spec.summary));
            for (_, tool) in tools.iter().filter(|(server, _)| *server == spec.name) {
                // Written whole, server first: a model that sees the tool
                // indented under its server alone calls it by another name.
                let call = if tool.synopsis.is_empty() { &tool.name } else { &tool.synopsis };
                let output = if tool.output.is_empty() { String::new() } else { format!(" → {}", tool.output) };
                let summary = tool.description.lines().next().unwrap_or_default();
                text.push_str(&format!("    {} {call}{output}\n      {summary}\n", spec.name));
            }
        }
        text
    }
}

/// A catalog that is filled after the commands that read it were built.
pub(crate) type SharedCatalog = Arc<OnceLock<Catalog>>;

pub(crate) fn catalog_of(shared: &SharedCatalog) -> Catalog {
    shared.get().cloned().unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(name: &str) -> CommandSpec {
        CommandSpec {
            name: name.into(),
            summary: format!("{name}'s tools"),
            usage: String::new(),
            subcommands: Vec::new(),
            details: String::new(),
            needs_args: false,
        }
    }

    /// Known tools are listed under their server while there are at most
    /// [`LISTED_AT_MOST`] of them in all; past that, servers only.
    #[test]
    fn known_tools_are_listed_up_to_the_limit() {
        for (known, listed) in [(0, 0), (3, 3), (LISTED_AT_MOST, LISTED_AT_MOST), (LISTED_AT_MOST + 1, 0)] {
            let mcp_tools: Vec<(String, ListedTool)> = (0..known)
                .map(|i| {
                    let server = if i % 2 == 0 { "a" } else { "b" };
                    let tool = ListedTool {
                        name: format!("tool{i}"),
                        description: format!("does {i}\nin detail"),
                        parameters: vec!["n".into()],
                        synopsis: format!("tool{i} --n INT"),
                        output: if i == 0 { "{rows:[{id}]}".into() } else { String::new() },
                    };
                    (server.to_string(), tool)
                })
                .collect();
            let catalog = Catalog { mcp: vec![server("a"), server("b")], mcp_tools, ..Catalog::default() };
            let section = catalog.mcp_section();
            let lines: Vec<&str> =
                section.lines().filter(|l| l.starts_with("    a tool") || l.starts_with("    b tool")).collect();
            assert_eq!(lines.len(), listed, "{known} known:\n{section}");
            // How each is called, its result's shape when it has one, and
            // its summary on the line after.
            if listed > 0 {
                assert!(section.contains("    a tool0 --n INT → {rows:[{id}]}\n      does 0\n"), "{section}");
            }
            if listed > 1 {
                assert!(section.contains("    b tool1 --n INT\n      does 1\n"), "{section}");
            }
            if listed > 1 {
                // Each under its own server.
                let b = section.find("  b  ").unwrap();
                assert!(
                    section.find("    b tool1 ").unwrap() > b && section.find("    a tool0 ").unwrap() < b,
                    "{section}"
                );
            }
        }
    }
}
