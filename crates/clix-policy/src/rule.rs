//! One rule: what it matches, what it decides, why, and where it was written.

use std::fmt;
use std::sync::{Arc, OnceLock};

use regex::Regex;
use serde::{Deserialize, Serialize};

use crate::words::{
    Context, OperandKind, basename, cover_a_protected_folder, glob_matches, has_flag, is_disk_device, operands,
};

/// What a rule decides. Ordered from the most to the least permissive, so
/// the strictest of several is their maximum.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Decision {
    /// The command runs.
    #[default]
    Allow,
    /// A person must say yes first; where no one can answer, a deny.
    Ask,
    /// The command does not run, and neither does the rest of the line.
    Deny,
}

impl fmt::Display for Decision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Decision::Allow => "allow",
            Decision::Ask => "ask",
            Decision::Deny => "deny",
        })
    }
}

/// One word of a `match` prefix: a glob, or a list of globs any of which may match.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum Word {
    /// One glob (`push`, `mkfs.*`).
    One(String),
    /// Any of these globs (`["--force", "-f"]`).
    Any(Vec<String>),
}

impl Word {
    fn alternatives(&self) -> &[String] {
        match self {
            Word::One(one) => std::slice::from_ref(one),
            Word::Any(any) => any,
        }
    }
}

/// A structure of a whole line that no single command shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Shape {
    /// A function whose body pipes two calls of itself (`:(){ :|:& };:`).
    ForkBomb,
    /// A pipeline from `curl`/`wget` into a shell (`curl … | sh`).
    DownloadToShell,
}

/// A kind of redirection target a rule can refuse.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum RedirectTarget {
    /// `>`/`>>` onto a disk device.
    Device,
}

/// A rule as written in TOML (`[[rule]]` in `policy.toml`, `[[policy.rule]]`
/// in `config.toml`). Exactly one of `match`, `program`, `redirect` and
/// `shape` says what it is about; `flags`, `operand` and `args_regex`
/// narrow a `match`/`program` rule (all given must hold).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuleSpec {
    /// A name for messages and `disable`; default `rule N` of its file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// A prefix of the argv: the program (by basename) then words; a list inside = any of.
    #[serde(default, rename = "match", skip_serializing_if = "Vec::is_empty")]
    pub matches: Vec<Word>,
    /// A whole program (by basename, globs allowed), or a list of them.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub program: Option<Word>,
    /// A redirection target of the line (`device`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect: Option<RedirectTarget>,
    /// A structure of the line (`fork-bomb`, `download-to-shell`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub shape: Option<Shape>,
    /// Any of these options present (clusters and long prefixes understood; never after `--`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub flags: Vec<String>,
    /// Some operand is of this kind (`root`, `protected`, `device`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub operand: Option<OperandKind>,
    /// A regex that must match the arguments joined by single spaces.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub args_regex: Option<String>,
    /// allow, ask or deny.
    pub decision: Decision,
    /// Why: shown with every decision the rule makes.
    pub why: String,
    /// Lines it must match; checked when rules load.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<String>,
    /// Lines it must not match; checked when rules load.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub counterexamples: Vec<String>,
}

/// Where a rule was written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Origin {
    /// The file (`built-in defaults` for clix's own rules).
    pub file: String,
    /// Which kind of place it is: it decides what the rule may do.
    pub scope: Scope,
}

/// Whose rules a file holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scope {
    /// clix's built-in defaults.
    Defaults,
    /// The person's own config (`config.toml`, their `policy.toml`).
    User,
    /// The workspace's `.clix/policy.toml`: it came with whatever was cloned,
    /// so it may only add `deny` and `ask` rules.
    Workspace,
}

/// One word of a compiled prefix: its alternatives, each a glob or a
/// plain word (told apart once, at load, since this runs on every command).
#[derive(Debug, Clone)]
pub(crate) struct Alternatives(Vec<(String, bool)>);

impl Alternatives {
    fn new(word: &Word) -> Self {
        Alternatives(word.alternatives().iter().map(|w| (w.clone(), w.contains(['*', '?']))).collect())
    }

    fn matches(&self, given: &str) -> bool {
        self.0.iter().any(|(text, glob)| if *glob { glob_matches(text, given) } else { text == given })
    }

    /// The words this matches, when none is a glob.
    fn literals(&self) -> Option<impl Iterator<Item = &str>> {
        self.0.iter().all(|(_, glob)| !glob).then(|| self.0.iter().map(|(text, _)| text.as_str()))
    }
}

/// A rule's `args_regex`, its syntax checked when the rule is read and
/// compiled the first time a command reaches it: compiling the built-in
/// rules' patterns (Unicode `\S` and `\d` among them) was 2 ms of every
/// start, and most lines never reach a rule that has one.
#[derive(Debug, Clone)]
pub(crate) struct ArgsRegex {
    pattern: String,
    compiled: Arc<OnceLock<Option<Regex>>>,
}

impl ArgsRegex {
    /// `pattern`, its syntax checked; an error says what is wrong with it.
    fn checked(pattern: &str) -> Result<ArgsRegex, String> {
        regex_syntax::ast::parse::Parser::new().parse(pattern).map_err(|e| format!("`args_regex`: {e}"))?;
        Ok(ArgsRegex { pattern: pattern.to_string(), compiled: Arc::default() })
    }

    /// Whether `text` matches. A pattern that parses but cannot be compiled
    /// (past the regex engine's size limit) matches everything: the rule
    /// then decides, never a silent pass.
    fn is_match(&self, text: &str) -> bool {
        let compiled = self.compiled.get_or_init(|| match Regex::new(&self.pattern) {
            Ok(re) => Some(re),
            Err(e) => {
                tracing::warn!(pattern = %self.pattern, error = %e, "a policy rule's args_regex cannot be compiled; it matches every command its rule names");
                None
            }
        });
        compiled.as_ref().is_none_or(|re| re.is_match(text))
    }
}

/// What a compiled rule looks at.
#[derive(Debug, Clone)]
pub(crate) enum Target {
    Command { prefix: Vec<Alternatives>, flags: Vec<String>, operand: Option<OperandKind>, args: Option<ArgsRegex> },
    Redirect(RedirectTarget),
    Shape(Shape),
}

/// A rule ready to match.
#[derive(Debug, Clone)]
pub struct Rule {
    /// Its name (`id`, or `rule N`).
    pub id: String,
    /// What it decides.
    pub decision: Decision,
    /// Why, for every message.
    pub why: String,
    /// Where it was written.
    pub origin: Origin,
    /// As written, for `clix policy list`.
    pub spec: RuleSpec,
    pub(crate) target: Target,
}

impl Rule {
    /// Compiles `spec`, the `index`-th rule (from 1) of `origin`; an error says what to fix.
    pub(crate) fn compile(spec: RuleSpec, index: usize, origin: Origin) -> Result<Rule, String> {
        let id = spec.id.clone().unwrap_or_else(|| format!("rule {index}"));
        let kinds = usize::from(!spec.matches.is_empty())
            + usize::from(spec.program.is_some())
            + usize::from(spec.redirect.is_some())
            + usize::from(spec.shape.is_some());
        if kinds != 1 {
            return Err("give exactly one of `match`, `program`, `redirect` or `shape`".into());
        }
        if spec.why.trim().is_empty() {
            return Err("`why` is empty: say why the rule exists (it is shown with every decision)".into());
        }
        let narrows = !spec.flags.is_empty() || spec.operand.is_some() || spec.args_regex.is_some();
        let target = if let Some(redirect) = spec.redirect {
            if narrows {
                return Err("`flags`, `operand` and `args_regex` apply to `match`/`program` rules only".into());
            }
            Target::Redirect(redirect)
        } else if let Some(shape) = spec.shape {
            if narrows {
                return Err("`flags`, `operand` and `args_regex` apply to `match`/`program` rules only".into());
            }
            Target::Shape(shape)
        } else {
            let prefix = match &spec.program {
                Some(program) => vec![program.clone()],
                None => spec.matches.clone(),
            };
            if prefix.iter().any(|w| w.alternatives().is_empty()) {
                return Err("an empty list in `match`/`program` can never match".into());
            }
            if let Some(bad) = spec.flags.iter().find(|f| !f.starts_with('-') || f.len() < 2) {
                return Err(format!("flag `{bad}` must be written -x or --name"));
            }
            let args = spec.args_regex.as_deref().map(ArgsRegex::checked).transpose()?;
            let prefix = prefix.iter().map(Alternatives::new).collect();
            Target::Command { prefix, flags: spec.flags.clone(), operand: spec.operand, args }
        };
        Ok(Rule { id, decision: spec.decision, why: spec.why.clone(), origin, spec, target })
    }

    /// Whether the rule asks about an operand's kind (where it leads), so a
    /// command's folder matters to it.
    pub(crate) fn reads_operands(&self) -> bool {
        matches!(self.target, Target::Command { operand: Some(_), .. })
    }

    /// The programs (`argv[0]` basenames) this rule can match: `Some` of
    /// the names when its first word is plain words, `Some` of none when it
    /// is not about commands, `None` when any program might match (a glob).
    pub(crate) fn programs(&self) -> Option<Vec<&str>> {
        let Target::Command { prefix, .. } = &self.target else { return Some(Vec::new()) };
        Some(prefix.first()?.literals()?.collect())
    }

    /// Whether this command rule matches one invocation (`argv[0]` by basename).
    pub(crate) fn matches_command(&self, argv: &[String], ctx: &Context) -> bool {
        argv.first().is_some_and(|first| self.matches_program(basename(first), argv, ctx))
    }

    /// [`Rule::matches_command`] with `argv[0]`'s basename, `program`, found
    /// once for all the rules: this runs for every rule on every command.
    pub(crate) fn matches_program(&self, program: &str, argv: &[String], ctx: &Context) -> bool {
        let Target::Command { prefix, flags, operand, args } = &self.target else { return false };
        if argv.len() < prefix.len() {
            return false;
        }
        let prefix_ok = prefix.iter().enumerate().all(|(i, word)| {
            let given = if i == 0 { program } else { argv[i].as_str() };
            word.matches(given)
        });
        if !prefix_ok {
            return false;
        }
        let rest = &argv[1..];
        if !flags.is_empty() && !flags.iter().any(|f| has_flag(rest, f)) {
            return false;
        }
        if let Some(kind) = operand {
            // `of=/dev/sda` names its target after the `=`.
            let words = operands(rest);
            let hit = words.iter().any(|word| {
                kind.covers(word, ctx) || word.split_once('=').is_some_and(|(_, value)| kind.covers(value, ctx))
            }) || (*kind == OperandKind::Protected && cover_a_protected_folder(&words, ctx));
            if !hit {
                return false;
            }
        }
        args.as_ref().is_none_or(|re| re.is_match(&rest.join(" ")))
    }

    /// Whether this redirect rule refuses a write to `path`.
    pub(crate) fn matches_redirect(&self, path: &str) -> bool {
        matches!(self.target, Target::Redirect(RedirectTarget::Device)) && is_disk_device(path)
    }

    /// The shape this rule looks for, if it is a shape rule.
    pub(crate) fn shape(&self) -> Option<Shape> {
        match self.target {
            Target::Shape(shape) => Some(shape),
            _ => None,
        }
    }

    /// One line for `clix policy list`: what it matches.
    pub fn describe(&self) -> String {
        let s = &self.spec;
        let word = |w: &Word| match w {
            Word::One(one) => one.clone(),
            Word::Any(any) => format!("[{}]", any.join("|")),
        };
        let mut text = match (&self.target, &s.program) {
            (Target::Redirect(_), _) => "redirect to a disk device".to_string(),
            (Target::Shape(Shape::ForkBomb), _) => "shape: fork bomb".to_string(),
            (Target::Shape(Shape::DownloadToShell), _) => "shape: download piped into a shell".to_string(),
            (_, Some(program)) => format!("program {}", word(program)),
            _ => format!("match {}", s.matches.iter().map(word).collect::<Vec<_>>().join(" ")),
        };
        if !s.flags.is_empty() {
            text.push_str(&format!(" with {}", s.flags.join("|")));
        }
        if let Some(operand) = s.operand {
            let kind =
                serde_json::to_value(operand).ok().and_then(|v| v.as_str().map(String::from)).unwrap_or_default();
            text.push_str(&format!(" on a {kind} path"));
        }
        if let Some(re) = &s.args_regex {
            text.push_str(&format!(" args ~ /{re}/"));
        }
        text
    }
}

impl Origin {
    /// Where a rule lives, as messages say it: `rule `x` in FILE`.
    pub fn place(&self, id: &str) -> String {
        format!("rule `{id}` in {}", self.file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bad pattern is refused when the rule is read; a good one compiles
    /// at its first use; one the engine cannot compile (past its size
    /// limit) matches, so its rule decides rather than a silent pass.
    #[test]
    fn an_args_regex_is_checked_at_load_and_compiled_at_first_use() {
        assert!(ArgsRegex::checked("(unclosed").unwrap_err().starts_with("`args_regex`: "));
        let re = ArgsRegex::checked(r"(^| )of=/dev/sd").unwrap();
        assert!(re.compiled.get().is_none(), "not compiled before a command reaches it");
        assert!(re.is_match("if=x of=/dev/sda") && !re.is_match("of=out.img"));
        assert!(re.compiled.get().is_some_and(Option::is_some));
        let huge = ArgsRegex::checked(r"\w{1000}{1000}").unwrap();
        assert!(huge.is_match("anything"), "an uncompilable pattern matches every command");
    }
}
