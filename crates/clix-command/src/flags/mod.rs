//! One flag grammar for the subcommands of every command (`memory`, `hub`,
//! `sandbox`, …).
//!
//! Each subcommand declares its operands and options once, as a [`Syntax`];
//! its usage line is generated from that declaration, and every subcommand
//! parses its words the same way:
//!
//! - options may come before, between or after the operands, unless the
//!   operands are a program's argv ([`Syntax::options_first`]): then
//!   options end at the first operand;
//! - `--` ends the options: every word after it is an operand, even one
//!   that starts with `-`;
//! - a long option takes its value as the next word or after `=`
//!   (`--topic ops`, `--topic=ops`); a short one as the next word (`-t ops`);
//! - the same letter means the same thing in every command: `-t` topic,
//!   `-k` keyword, `-n` how many, `--json` JSON (output, or for `hub call`
//!   the arguments);
//! - `-h` / `--help` prints the subcommand's usage;
//! - an unknown option, a missing value or a bad count is a usage error
//!   (exit 2) that names the problem, says what to do and repeats the usage.

use std::fmt::Write as _;

use bashkit::CommandStatus;

use crate::{CommandIo, CommandSpec, SubcommandSpec, USAGE_EXIT, fail, usage_error};

pub mod typed;
mod words;

use words::{Word, Words};

/// An option no declaration has, with the known one it is a slip for
/// (`--topc`: did you mean --topic?) and how to pass a word that only
/// looks like an option. Every grammar of this module says it so.
fn unknown_option<'a>(flag: &str, known: impl IntoIterator<Item = &'a str>) -> String {
    let near = clix_common::names::did_you_mean(flag, known);
    match near {
        Some(near) => format!("unknown option {flag} (did you mean {near}? put -- before words that start with -)"),
        None => format!("unknown option {flag} (put -- before words that start with -)"),
    }
}

/// What a command's first word picked: a subcommand's syntax with the
/// words after it, or a usage error already written (its status).
pub enum Picked<'a> {
    /// A subcommand was picked.
    Sub {
        /// How it is called.
        syntax: &'static Syntax,
        /// Its spec, as `--help` shows it.
        spec: &'a SubcommandSpec,
        /// The words after it.
        rest: &'a [String],
    },
    /// No subcommand was: the usage error is written, this is its status.
    Refused(CommandStatus),
}

/// The subcommand of `spec` that `io.args` starts with, among `syntaxes`;
/// a missing or unknown one is the usage error every command gives.
pub async fn pick<'a>(
    io: &CommandIo<'a>,
    spec: &'a CommandSpec,
    syntaxes: &[&'static Syntax],
) -> bashkit::Result<Picked<'a>> {
    let (sub, rest) = match spec.pick_subcommand(io.args) {
        Ok(picked) => picked,
        Err(line) => return fail(io, &line, USAGE_EXIT).await.map(Picked::Refused),
    };
    match Syntax::of(syntaxes, sub) {
        Some(syntax) => Ok(Picked::Sub { syntax, spec: sub, rest }),
        None => {
            let line = format!("[error] {}: no subcommand {}\n", spec.name, sub.name);
            fail(io, &line, USAGE_EXIT).await.map(Picked::Refused)
        }
    }
}

/// A subcommand picked and its words parsed: its syntax, its spec and
/// what was given.
pub type Chosen<'a> = (&'static Syntax, &'a SubcommandSpec, Parsed);

/// [`pick`], then [`Syntax::parse`] of the rest: the subcommand and its
/// words, or the status of the help page or usage error already written.
pub async fn pick_parsed<'a>(
    io: &CommandIo<'a>,
    spec: &'a CommandSpec,
    syntaxes: &[&'static Syntax],
) -> bashkit::Result<Result<Chosen<'a>, CommandStatus>> {
    let (syntax, sub, rest) = match pick(io, spec, syntaxes).await? {
        Picked::Sub { syntax, spec, rest } => (syntax, spec, rest),
        Picked::Refused(status) => return Ok(Err(status)),
    };
    match syntax.parse(rest) {
        Ok(parsed) => Ok(Ok((syntax, sub, parsed))),
        Err(misuse) => syntax.report(io, &sub.summary, misuse).await.map(Err),
    }
}

/// How one subcommand is called.
#[derive(Debug)]
pub struct Syntax {
    /// What errors are attributed to and the usage line starts with: `memory search`.
    pub name: &'static str,
    /// Its positional words, in order.
    pub operands: &'static [Operand],
    /// In usage order.
    pub options: &'static [Item],
    /// Options end at the first operand: the operands are a program and its
    /// arguments, whose own flags must reach it untouched.
    pub options_first: bool,
    /// A missing operand may still come from stdin, so the command checks
    /// for it itself once stdin is read.
    pub operands_from_stdin: bool,
}

/// One positional word (or run of words).
#[derive(Debug)]
pub struct Operand {
    /// As the usage line shows it: `<query>`, `[n]`, `'<script>'`, `[args…]`.
    pub shown: &'static str,
    /// How many words it takes.
    pub arity: Arity,
}

/// How many words an [`Operand`] takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arity {
    /// Exactly one.
    One,
    /// None or one.
    Optional,
    /// One or more (the rest of the words).
    Many,
    /// Any number, none included (the rest of the words).
    Rest,
}

/// One option.
#[derive(Debug)]
pub struct Opt {
    /// `-t`; the usage shows this form when there is one.
    pub short: Option<&'static str>,
    /// `--topic`; also the name the command reads the option by.
    pub long: &'static str,
    /// What follows it.
    pub takes: Takes,
}

/// What follows an option.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Takes {
    /// Nothing: the option is on or off.
    Nothing,
    /// Any text; the usage shows the placeholder (`topic`).
    Text(&'static str),
    /// A whole number of at least 1; the usage shows the placeholder (`5`, the default).
    Count(&'static str),
}

/// An entry of a subcommand's option list, as the usage line shows it.
#[derive(Debug)]
pub enum Item {
    /// `[-t topic]`.
    Shown(Opt),
    /// Options for the same thing: `[-t topic | --global]`.
    Either(&'static [Opt]),
    /// Accepted but left out of the usage line (whose wording is fixed by
    /// the seed): `memory recent -n 3` is what a model may well type.
    Hidden(Opt),
}

impl Item {
    fn opts(&self) -> &[Opt] {
        match self {
            Item::Shown(opt) | Item::Hidden(opt) => std::slice::from_ref(opt),
            Item::Either(opts) => opts,
        }
    }
}

/// A value given to an option.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Value {
    On,
    Text(String),
    Count(usize),
}

/// The words of one call, sorted into options and operands.
#[derive(Debug)]
pub struct Parsed {
    /// (long name, value), in the order given; a later one wins.
    options: Vec<(&'static str, Value)>,
    /// The words that are not options, in order.
    pub operands: Vec<String>,
}

/// Why the words do not make a call.
#[derive(Debug, PartialEq, Eq)]
pub enum Misuse {
    /// `-h` / `--help`: not an error, the usage is printed to stdout.
    Help,
    /// Operands missing or too many: the usage line is the whole message.
    Usage,
    /// A specific problem, said before the usage line.
    Said(String),
}

impl Syntax {
    /// A subcommand whose options may stand anywhere and whose operands are
    /// all given on the line (most are): `name`, `operands`, `options`.
    pub const fn plain(name: &'static str, operands: &'static [Operand], options: &'static [Item]) -> Syntax {
        Syntax { name, operands, options, options_first: false, operands_from_stdin: false }
    }

    /// The usage line, generated from the declaration.
    pub fn usage(&self) -> String {
        let mut line = self.name.to_string();
        for operand in self.operands {
            line.push(' ');
            line.push_str(operand.shown);
        }
        for item in self.options {
            let shown: Vec<String> = match item {
                Item::Shown(opt) => vec![opt.shown()],
                Item::Either(opts) => opts.iter().map(Opt::shown).collect(),
                Item::Hidden(_) => continue,
            };
            let _ = write!(line, " [{}]", shown.join(" | "));
        }
        line
    }

    /// `search` of `memory search`: the word that picks this syntax.
    pub fn subcommand(&self) -> &'static str {
        self.name.split_once(' ').map_or(self.name, |(_, sub)| sub)
    }

    /// How `help` and the bare-call error show this subcommand.
    pub fn spec(&self, summary: &str) -> SubcommandSpec {
        SubcommandSpec::new(self.subcommand(), &self.usage(), summary)
    }

    /// The syntax among `syntaxes` that `sub` picks.
    fn of<'s>(syntaxes: &[&'s Syntax], sub: &SubcommandSpec) -> Option<&'s Syntax> {
        syntaxes.iter().copied().find(|s| s.subcommand() == sub.name)
    }

    fn find(&self, word: &str) -> Option<&Opt> {
        self.options.iter().flat_map(Item::opts).find(|o| o.long == word || o.short == Some(word))
    }

    /// Sorts `words` into options and operands by the rules of this module.
    pub fn parse(&self, words: &[String]) -> Result<Parsed, Misuse> {
        let mut parsed = Parsed { options: Vec::new(), operands: Vec::new() };
        let mut words = Words::new(words);
        while let Some(word) = words.next() {
            let (flag, inline) = match word {
                Word::Operand(operand) => {
                    parsed.operands.push(operand.to_string());
                    if self.options_first {
                        words.end_options();
                    }
                    continue;
                }
                Word::Help => return Err(Misuse::Help),
                Word::Option { flag, inline } => (flag, inline),
            };
            let Some(opt) = self.find(flag) else {
                return Err(Misuse::Said(unknown_option(
                    flag,
                    self.options.iter().flat_map(Item::opts).map(|o| o.long),
                )));
            };
            let value = match (opt.takes, inline) {
                (Takes::Nothing, None) => Value::On,
                (Takes::Nothing, Some(_)) => return Err(Misuse::Said(format!("{flag} takes no value"))),
                (takes, inline) => {
                    let Some(given) = inline.or_else(|| words.value()) else {
                        return Err(Misuse::Said(format!("{flag} needs a value")));
                    };
                    match takes {
                        Takes::Count(_) => Value::Count(count(flag, given)?),
                        _ => Value::Text(given.to_string()),
                    }
                }
            };
            parsed.options.push((opt.long, value));
        }
        self.check_operands(&parsed.operands)?;
        Ok(parsed)
    }

    /// Too few or too many operands for the declaration.
    fn check_operands(&self, operands: &[String]) -> Result<(), Misuse> {
        let unbounded = self.operands.iter().any(|o| matches!(o.arity, Arity::Many | Arity::Rest));
        let at_most = self.operands.len();
        let at_least = self.operands.iter().filter(|o| matches!(o.arity, Arity::One | Arity::Many)).count();
        let too_few = operands.len() < at_least && !self.operands_from_stdin;
        if too_few || (!unbounded && operands.len() > at_most) {
            return Err(Misuse::Usage);
        }
        Ok(())
    }

    /// Writes what `misuse` calls for: the usage to stdout for `--help`,
    /// otherwise an `[error]` line with the usage to stderr, exit 2.
    pub async fn report(&self, io: &CommandIo<'_>, summary: &str, misuse: Misuse) -> bashkit::Result<CommandStatus> {
        match misuse {
            Misuse::Help => {
                io.stdout.write_all(format!("usage: {}\n\n{summary}\n", self.usage()).as_bytes()).await?;
                Ok(CommandStatus::success())
            }
            Misuse::Usage => usage_error(io, self.name, &self.usage()).await,
            Misuse::Said(problem) => {
                fail(io, &format!("[error] {}: {problem}. usage: {}\n", self.name, self.usage()), USAGE_EXIT).await
            }
        }
    }
}

impl Opt {
    /// `-t topic`, `--json`, `--kind note|fact`.
    fn shown(&self) -> String {
        let name = self.short.unwrap_or(self.long);
        match self.takes {
            Takes::Nothing => name.to_string(),
            Takes::Text(placeholder) | Takes::Count(placeholder) => format!("{name} {placeholder}"),
        }
    }
}

impl Parsed {
    /// Whether the switch `long` was given.
    pub fn on(&self, long: &str) -> bool {
        self.options.iter().any(|(name, value)| *name == long && *value == Value::On)
    }

    /// Whether `long` was given at all, with or without a value.
    pub fn has(&self, long: &str) -> bool {
        self.options.iter().any(|(name, _)| *name == long)
    }

    /// The text given to `long`, the last one when given twice.
    pub fn text(&self, long: &str) -> Option<&str> {
        self.options.iter().rev().find_map(|(name, value)| match value {
            Value::Text(text) if *name == long => Some(text.as_str()),
            _ => None,
        })
    }

    /// The count given to `long`, the last one when given twice.
    pub fn count(&self, long: &str) -> Option<usize> {
        self.options.iter().rev().find_map(|(name, value)| match value {
            Value::Count(n) if *name == long => Some(*n),
            _ => None,
        })
    }
}

/// `value` as a count of at least 1; `what` names it in the error.
pub fn count(what: &str, value: &str) -> Result<usize, Misuse> {
    value
        .parse()
        .ok()
        .filter(|n| *n > 0)
        .ok_or_else(|| Misuse::Said(format!("{what} needs a number of at least 1, not {value:?}")))
}

/// Short forms that mean one thing in every command.
pub mod common {
    use super::{Opt, Takes};

    /// `--json`: print JSON instead of text.
    pub const JSON: Opt = Opt { short: None, long: "--json", takes: Takes::Nothing };
    /// `-t topic`: a memory topic.
    pub const TOPIC: Opt = Opt { short: Some("-t"), long: "--topic", takes: Takes::Text("topic") };
    /// `-k keyword`: keep only what contains the keyword.
    pub const KEYWORD: Opt = Opt { short: Some("-k"), long: "--keyword", takes: Takes::Text("keyword") };

    /// `-n 5`: how many results at most; the placeholder shows the default.
    pub const fn limit(default: &'static str) -> Opt {
        Opt { short: Some("-n"), long: "--limit", takes: Takes::Count(default) }
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)]

    use super::common::{JSON, KEYWORD, TOPIC, limit};
    use super::*;

    const GLOBAL: Opt = Opt { short: None, long: "--global", takes: Takes::Nothing };
    const SEARCH: Syntax = Syntax::plain(
        "memory search",
        &[Operand { shown: "<query>", arity: Arity::Many }],
        &[
            Item::Either(&[TOPIC, GLOBAL]),
            Item::Shown(KEYWORD),
            Item::Shown(limit("5")),
            Item::Shown(JSON),
            Item::Hidden(Opt { short: None, long: "--kind", takes: Takes::Text("kind") }),
        ],
    );
    const RUN: Syntax = Syntax {
        name: "sandbox run",
        operands: &[
            Operand { shown: "<program>", arity: Arity::One },
            Operand { shown: "[args…]", arity: Arity::Rest },
        ],
        options: &[Item::Shown(JSON)],
        options_first: true,
        operands_from_stdin: false,
    };
    const ONE: Syntax =
        Syntax::plain("hub info", &[Operand { shown: "<tool>", arity: Arity::One }], &[Item::Shown(JSON)]);

    fn words(line: &str) -> Vec<String> {
        line.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn usage_lines_come_from_the_declaration() {
        assert_eq!(SEARCH.usage(), "memory search <query> [-t topic | --global] [-k keyword] [-n 5] [--json]");
        assert_eq!(RUN.usage(), "sandbox run <program> [args…] [--json]");
        assert_eq!(ONE.usage(), "hub info <tool> [--json]");
    }

    #[test]
    fn words_become_options_and_operands_the_same_way_everywhere() {
        // (syntax, words, operands, topic, keyword, limit, json)
        type Row = (
            &'static Syntax,
            &'static str,
            &'static str,
            Option<&'static str>,
            Option<&'static str>,
            Option<usize>,
            bool,
        );
        let rows: &[Row] = &[
            (&SEARCH, "deploy key", "deploy key", None, None, None, false),
            (&SEARCH, "deploy -t ops key --json", "deploy key", Some("ops"), None, None, true),
            (&SEARCH, "--topic=ops -k friday deploy -n 2", "deploy", Some("ops"), Some("friday"), Some(2), false),
            (&SEARCH, "-t a -t b x", "x", Some("b"), None, None, false),
            // `--` ends the options everywhere; `-` alone is a word.
            (&SEARCH, "x -- -v --json", "x -v --json", None, None, None, false),
            (&SEARCH, "- -k -n", "-", None, Some("-n"), None, false),
            // A value that starts with `-` is still the option's value.
            (&SEARCH, "x -t -odd", "x", Some("-odd"), None, None, false),
            // A program's own flags are its own.
            (&RUN, "ls -la --json", "ls -la --json", None, None, None, false),
            (&RUN, "--json ls -la", "ls -la", None, None, None, true),
            (&RUN, "-- -weird", "-weird", None, None, None, false),
        ];
        for &(syntax, line, operands, topic, keyword, count, json) in rows {
            let parsed = syntax.parse(&words(line)).unwrap();
            assert_eq!(parsed.operands.join(" "), operands, "{line}");
            assert_eq!(parsed.text("--topic"), topic, "{line}");
            assert_eq!(parsed.text("--keyword"), keyword, "{line}");
            assert_eq!(parsed.count("--limit"), count, "{line}");
            assert_eq!(parsed.on("--json"), json, "{line}");
        }
        assert!(SEARCH.parse(&words("x --global")).unwrap().on("--global"));
        assert_eq!(SEARCH.parse(&words("x --kind fact")).unwrap().text("--kind"), Some("fact"), "hidden, accepted");
    }

    #[test]
    fn misuse_is_named_with_what_to_do() {
        let rows: &[(&Syntax, &str, Misuse)] = &[
            (&SEARCH, "", Misuse::Usage),
            (&SEARCH, "-t ops", Misuse::Usage),
            (&SEARCH, "x --help", Misuse::Help),
            (&SEARCH, "-h", Misuse::Help),
            (&SEARCH, "x -x", Misuse::Said("unknown option -x (put -- before words that start with -)".into())),
            (
                &SEARCH,
                "x --verbose=1",
                Misuse::Said("unknown option --verbose (put -- before words that start with -)".into()),
            ),
            (
                &SEARCH,
                "x --topc ops",
                Misuse::Said(
                    "unknown option --topc (did you mean --topic? put -- before words that start with -)".into(),
                ),
            ),
            (&SEARCH, "x -t", Misuse::Said("-t needs a value".into())),
            (&SEARCH, "x -n many", Misuse::Said("-n needs a number of at least 1, not \"many\"".into())),
            (&SEARCH, "x --limit=0", Misuse::Said("--limit needs a number of at least 1, not \"0\"".into())),
            (&SEARCH, "x --json=yes", Misuse::Said("--json takes no value".into())),
            (&ONE, "a b", Misuse::Usage),
            (&ONE, "", Misuse::Usage),
            (&RUN, "--json", Misuse::Usage),
            (&RUN, "-x ls", Misuse::Said("unknown option -x (put -- before words that start with -)".into())),
        ];
        for (syntax, line, want) in rows {
            assert_eq!(syntax.parse(&words(line)).unwrap_err(), *want, "{}: {line}", syntax.name);
        }
    }

    #[test]
    fn operands_from_stdin_may_be_missing() {
        let store = Syntax { operands_from_stdin: true, ..SEARCH };
        assert!(store.parse(&words("-t ops")).unwrap().operands.is_empty());
    }
}
