//! Parameters declared as data, as flags: a hub tool's manifest and an MCP
//! tool's `inputSchema` both become a list of [`Param`]s, and this module
//! is their one grammar. It reads the words of a call into checked JSON
//! arguments, checks JSON arguments given whole, and writes the synopsis and
//! the parameter table their help shows.
//!
//! - `--name value` and `--name=value`; a value may start with `-`
//!   (`--limit -5`); `_` in a name may be written `-` (`--owner-name`);
//! - a boolean is `--name` (or `--name=true|false`);
//! - an array parameter repeats its flag, each value one item;
//! - given twice, a later value wins (as in [`super::Syntax`]);
//! - bare words fill the positional parameters in order, a positional array
//!   taking the rest; a positional may also be given by its flag;
//! - `--json '{…}'` gives some or all arguments as one object (the flags
//!   given too take precedence), unless a parameter is itself named `json`;
//! - `--` ends the flags, `-h`/`--help` asks for the help;
//! - every problem is an [`ArgError`] that names the flag and what it takes,
//!   with the known flag a mistyped one is a slip for.

use std::fmt;
use std::fmt::Write as _;

use clix_common::names::did_you_mean;
use serde_json::{Map, Number, Value};

use super::words::{Word, Words};

/// What values a parameter takes.
#[derive(Debug, Clone, PartialEq)]
pub enum Kind {
    /// Text.
    String,
    /// A whole number.
    Integer,
    /// A whole or decimal number.
    Number,
    /// `--name` when true.
    Boolean,
    /// Text, a number or a boolean (a hub array's item: a flag's word is
    /// text, a JSON item may be any of them).
    Scalar,
    /// One of these values.
    Enum(Vec<Value>),
    /// A list, one flag (or, when positional, one word) for each item.
    Array(Box<Kind>),
    /// Any JSON value (an object, or a type the flags do not spell).
    Json,
}

/// One parameter.
#[derive(Debug, Clone, PartialEq)]
pub struct Param {
    /// Its name: `--name`, and the key of the JSON arguments.
    pub name: String,
    /// What it takes.
    pub kind: Kind,
    /// A call without it is refused.
    pub required: bool,
    /// The value the tool uses when a call gives none (shown in the help).
    pub default: Option<Value>,
    /// Given as a bare word as well as by its flag.
    pub positional: bool,
    /// One line for the help.
    pub description: String,
}

/// Why a call's words or JSON arguments were refused; a usage error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ArgError {
    /// `-h` or `--help`: not an error, the caller prints the help.
    Help,
    /// A flag (or JSON key) no parameter has.
    Unknown {
        /// As written (`--tims`, `-t`).
        flag: String,
        /// The known flag it is a slip for.
        near: Option<String>,
        /// Every known flag.
        known: Vec<String>,
    },
    /// A flag that takes a value came last.
    MissingValue {
        /// The flag.
        flag: String,
        /// What it takes (`integer`, `one of a, b`).
        takes: String,
    },
    /// A value of the wrong type, or not among an enum's values.
    Invalid {
        /// The flag (`<path>` for a positional given bare).
        flag: String,
        /// What is wrong, and what it takes.
        problem: String,
    },
    /// Required parameters not given.
    Missing {
        /// Each as written: `--keyword`, `<path>`.
        flags: Vec<String>,
    },
    /// A bare word no positional parameter takes.
    Unexpected {
        /// The word.
        word: String,
        /// Every known flag.
        known: Vec<String>,
        /// Whether the tool has positionals at all (else every parameter is a flag).
        positional: bool,
    },
    /// `--json` given something other than a JSON object.
    NotAnObject {
        /// What it was given.
        problem: String,
    },
}

impl fmt::Display for ArgError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Help => write!(f, "usage requested"),
            Self::Unknown { flag, .. } if !flag.starts_with("--") => {
                write!(f, "unknown option {flag} (parameters are --name; put -- before a value that starts with -)")
            }
            Self::Unknown { flag, near: Some(near), .. } => {
                write!(f, "unknown parameter {flag} (did you mean {near}?)")
            }
            Self::Unknown { flag, near: None, known } if known.is_empty() => {
                write!(f, "unknown parameter {flag} (the tool takes none)")
            }
            Self::Unknown { flag, near: None, known } => {
                write!(f, "unknown parameter {flag} (its parameters: {})", known.join(", "))
            }
            Self::MissingValue { flag, takes } => write!(f, "{flag} needs a value ({takes})"),
            Self::Invalid { flag, problem } => write!(f, "{flag}: {problem}"),
            Self::Missing { flags } => write!(f, "missing required {}", flags.join(", ")),
            Self::Unexpected { word, positional: true, .. } => write!(f, "unexpected argument `{word}`"),
            Self::Unexpected { word, known, .. } => {
                write!(f, "unexpected argument `{word}`: every parameter is a flag ({})", known.join(", "))
            }
            Self::NotAnObject { problem } => {
                write!(f, "--json takes a JSON object ({{\"name\": value, ...}}): {problem}")
            }
        }
    }
}

impl std::error::Error for ArgError {}

/// The flag that gives arguments as one JSON object.
const JSON_FLAG: &str = "json";

impl Kind {
    /// The word for its value in a synopsis (`<integer>`, `<red|green>`);
    /// empty for a boolean, which takes none.
    pub fn placeholder(&self) -> String {
        match self {
            Kind::Boolean => String::new(),
            Kind::Enum(values) => format!("<{}>", values.iter().map(word_of).collect::<Vec<_>>().join("|")),
            Kind::Array(item) => item.placeholder(),
            other => format!("<{}>", other.name()),
        }
    }

    /// Its type as the help and errors name it.
    fn name(&self) -> String {
        match self {
            Kind::String | Kind::Scalar => "string".into(),
            Kind::Integer => "integer".into(),
            Kind::Number => "number".into(),
            Kind::Boolean => "boolean".into(),
            Kind::Enum(values) => format!("one of {}", words_of(values)),
            Kind::Array(item) => format!("array of {}", item.name()),
            Kind::Json => "JSON".into(),
        }
    }

    /// `word` as a value of this kind, or what is wrong with it.
    pub fn read(&self, word: &str) -> Result<Value, String> {
        let expected = |what: &str| format!("expected {what}, got `{word}`");
        match self {
            Kind::String | Kind::Scalar => Ok(Value::String(word.into())),
            Kind::Integer => word.parse::<i64>().map(Value::from).map_err(|_| expected("an integer")),
            Kind::Number => match word.parse::<i64>() {
                Ok(whole) => Ok(Value::from(whole)),
                Err(_) => word
                    .parse::<f64>()
                    .ok()
                    .and_then(Number::from_f64)
                    .map(Value::Number)
                    .ok_or_else(|| expected("a number")),
            },
            Kind::Boolean => match word {
                "true" => Ok(Value::Bool(true)),
                "false" => Ok(Value::Bool(false)),
                _ => Err(expected("true or false (write --flag or --flag=false)")),
            },
            Kind::Enum(values) => values
                .iter()
                .find(|v| word_of(v) == word)
                .cloned()
                .ok_or_else(|| format!("`{word}` is not one of: {}", words_of(values))),
            // A list or an object given whole, as JSON.
            Kind::Array(_) | Kind::Json => serde_json::from_str(word).map_err(|e| format!("not JSON: {e}")),
        }
    }

    /// Whether `v`, given as JSON, is a value of this kind.
    pub fn check(&self, v: &Value) -> Result<(), String> {
        let fits = match self {
            Kind::String => v.is_string(),
            Kind::Integer => v.is_i64() || v.is_u64(),
            Kind::Number => v.is_number(),
            Kind::Boolean => v.is_boolean(),
            Kind::Scalar => matches!(v, Value::String(_) | Value::Number(_) | Value::Bool(_)),
            Kind::Json => true,
            Kind::Enum(values) => {
                return match v {
                    _ if values.contains(v) => Ok(()),
                    Value::String(s) => Err(format!("`{s}` is not one of: {}", words_of(values))),
                    other => Err(format!("expected one of: {}, found {}", words_of(values), show(other))),
                };
            }
            Kind::Array(item) => {
                let Value::Array(items) = v else { return Err(format!("expected an array, found {}", show(v))) };
                return items.iter().try_for_each(|one| item.check(one).map_err(|e| format!("an item: {e}")));
            }
        };
        if fits {
            return Ok(());
        }
        let name = if *self == Kind::Scalar { "string, number or boolean".into() } else { self.name() };
        let article = if name.starts_with(['a', 'e', 'i', 'o', 'u']) { "an" } else { "a" };
        Err(format!("expected {article} {name}, found {}", show(v)))
    }
}

/// A JSON value as a flag's word (a string without its quotes).
fn word_of(v: &Value) -> String {
    v.as_str().map(String::from).unwrap_or_else(|| v.to_string())
}

/// An enum's values as the help and errors list them: `red, green`.
fn words_of(values: &[Value]) -> String {
    values.iter().map(word_of).collect::<Vec<_>>().join(", ")
}

/// A value's type as a message names it: `an integer`, `a string`, `null`.
pub fn kind_of(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(n) if n.is_i64() || n.is_u64() => "an integer",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

/// A value in a message: its type and, when short, the value itself
/// (`an integer 5`, `a string "50"`, `an object`).
pub fn show(v: &Value) -> String {
    let text = v.to_string();
    match v {
        Value::Null | Value::Array(_) | Value::Object(_) => kind_of(v).to_string(),
        _ if text.len() <= 40 => format!("{} {text}", kind_of(v)),
        _ => kind_of(v).to_string(),
    }
}

impl Param {
    /// `--name`.
    fn flag(&self) -> String {
        format!("--{}", self.name)
    }

    /// How a required one is named when missing: `<name>` for a positional.
    fn missing(&self) -> String {
        if self.positional { format!("<{}>", self.name) } else { self.flag() }
    }

    /// Whether `--flag` names it (`owner-name` names `owner_name`).
    fn named(&self, flag: &str) -> bool {
        self.name == flag || self.name.replace('_', "-") == flag
    }
}

/// The parameter `--flag` names.
fn find<'p>(params: &'p [Param], flag: &str) -> Option<&'p Param> {
    params.iter().find(|p| p.named(flag))
}

/// Whether `--json` gives the arguments as an object (no parameter has the name).
fn json_flag(params: &[Param]) -> bool {
    find(params, JSON_FLAG).is_none()
}

/// Every flag, as the errors list them.
fn known(params: &[Param]) -> Vec<String> {
    let json = json_flag(params).then(|| format!("--{JSON_FLAG}"));
    params.iter().map(Param::flag).chain(json).collect()
}

fn unknown(params: &[Param], flag: &str) -> ArgError {
    let known = known(params);
    let near = did_you_mean(flag, known.iter().map(String::as_str)).map(String::from);
    ArgError::Unknown { flag: flag.to_string(), near, known }
}

/// The arguments the words of a call give (the words after the tool's
/// name), each checked against its parameter; required ones must be there.
/// Defaults are not filled in: the tool (or its caller) applies them.
pub fn parse(params: &[Param], words: &[String]) -> Result<Map<String, Value>, ArgError> {
    let mut flagged = Map::new();
    let mut from_json = Map::new();
    let mut bare = Vec::new();
    let mut words = Words::new(words);
    while let Some(word) = words.next() {
        let (flag, inline) = match word {
            Word::Operand(word) => {
                bare.push(word);
                continue;
            }
            Word::Help => return Err(ArgError::Help),
            Word::Option { flag, inline } => (flag, inline),
        };
        let name = flag.strip_prefix("--").ok_or_else(|| unknown(params, flag))?;
        if name == JSON_FLAG && json_flag(params) {
            let text = inline
                .or_else(|| words.value())
                .ok_or_else(|| ArgError::MissingValue { flag: flag.to_string(), takes: "a JSON object".into() })?;
            match serde_json::from_str::<Value>(text) {
                Ok(Value::Object(object)) => from_json.extend(object),
                Ok(other) => return Err(ArgError::NotAnObject { problem: format!("found {}", show(&other)) }),
                Err(e) => return Err(ArgError::NotAnObject { problem: format!("not JSON: {e}") }),
            }
            continue;
        }
        let param = find(params, name).ok_or_else(|| unknown(params, flag))?;
        let invalid = |problem: String| ArgError::Invalid { flag: param.flag(), problem };
        let word = match (&param.kind, inline) {
            (Kind::Boolean, Some(word)) if word != "true" && word != "false" => {
                return Err(invalid(format!("a boolean flag takes no value (or =true / =false), got `{word}`")));
            }
            (_, Some(word)) => word,
            (Kind::Boolean, None) => "true",
            (kind, None) => {
                words.value().ok_or_else(|| ArgError::MissingValue { flag: param.flag(), takes: kind.name() })?
            }
        };
        match &param.kind {
            Kind::Array(item) => {
                let one = item.read(word).map_err(invalid)?;
                match flagged.entry(param.name.clone()).or_insert_with(|| Value::Array(Vec::new())) {
                    Value::Array(items) => items.push(one),
                    other => *other = Value::Array(vec![one]),
                }
            }
            kind => {
                flagged.insert(param.name.clone(), kind.read(word).map_err(invalid)?);
            }
        }
    }
    let mut bare = bare.into_iter();
    for param in params.iter().filter(|p| p.positional) {
        if flagged.contains_key(&param.name) {
            continue;
        }
        let invalid = |problem: String| ArgError::Invalid { flag: param.missing(), problem };
        let value = match &param.kind {
            Kind::Array(item) => {
                let items = bare.by_ref().map(|w| item.read(w)).collect::<Result<Vec<_>, _>>().map_err(invalid)?;
                if items.is_empty() {
                    continue;
                }
                Value::Array(items)
            }
            kind => match bare.next() {
                Some(word) => kind.read(word).map_err(invalid)?,
                None => continue,
            },
        };
        flagged.insert(param.name.clone(), value);
    }
    if let Some(word) = bare.next() {
        let positional = params.iter().any(|p| p.positional);
        return Err(ArgError::Unexpected { word: word.to_string(), known: known(params), positional });
    }
    from_json.extend(flagged);
    check(params, &from_json)?;
    Ok(from_json)
}

/// JSON arguments checked: each known one against its type, and every
/// required one given (`null` counts as not given). Keys no parameter has
/// are the caller's to judge ([`refuse_unknown`]): an MCP server may take
/// more than its schema says, a hub tool may not.
pub fn check(params: &[Param], args: &Map<String, Value>) -> Result<(), ArgError> {
    let mut missing = Vec::new();
    for param in params {
        match args.get(&param.name).filter(|v| !v.is_null()) {
            Some(v) => param.kind.check(v).map_err(|problem| ArgError::Invalid { flag: param.flag(), problem })?,
            None if param.required => missing.push(param.missing()),
            None => {}
        }
    }
    if missing.is_empty() { Ok(()) } else { Err(ArgError::Missing { flags: missing }) }
}

/// The first key of `args` no parameter has, as an error.
pub fn refuse_unknown(params: &[Param], args: &Map<String, Value>) -> Result<(), ArgError> {
    match args.keys().find(|key| params.iter().all(|p| &p.name != *key)) {
        Some(key) => Err(unknown(params, &format!("--{key}"))),
        None => Ok(()),
    }
}

/// `--keyword <string> [--limit <integer>] [--verbose] [<path>]`: how a
/// call is written, the flags in the order given, then the positionals.
pub fn synopsis(params: &[Param]) -> String {
    let flags = params.iter().filter(|p| !p.positional).map(|p| {
        let value = p.kind.placeholder();
        let repeat = if matches!(p.kind, Kind::Array(_)) { "..." } else { "" };
        let word = if value.is_empty() { p.flag() } else { format!("{} {value}{repeat}", p.flag()) };
        if p.required { word } else { format!("[{word}]") }
    });
    let positionals = params.iter().filter(|p| p.positional).map(|p| {
        let repeat = if matches!(p.kind, Kind::Array(_)) { "..." } else { "" };
        if p.required { format!("<{}>{repeat}", p.name) } else { format!("[<{}>{repeat}]", p.name) }
    });
    flags.chain(positionals).collect::<Vec<_>>().join(" ")
}

/// The help's table: each parameter with its type, whether it is required,
/// its default and its description; then `--json`. Lines start with two
/// spaces and end with a newline.
pub fn table(params: &[Param]) -> String {
    let mut rows: Vec<(String, String)> = params.iter().map(|p| (left(p), right(p))).collect();
    if json_flag(params) {
        rows.push((
            format!("--{JSON_FLAG} <object>"),
            "the arguments (or some of them) as one JSON object; flags given too take precedence".into(),
        ));
    }
    let width = rows.iter().map(|(left, _)| left.chars().count()).max().unwrap_or(0);
    let mut text = String::new();
    for (left, right) in rows {
        let _ = writeln!(text, "  {left:width$}  {right}");
    }
    text
}

fn left(p: &Param) -> String {
    let repeat = if matches!(p.kind, Kind::Array(_)) { "..." } else { "" };
    match p.kind.placeholder() {
        _ if p.positional => format!("<{}>{repeat}", p.name),
        value if value.is_empty() => p.flag(),
        value => format!("{} {value}", p.flag()),
    }
}

fn right(p: &Param) -> String {
    let mut facts = vec![match &p.kind {
        Kind::Array(item) if p.positional => format!("array of {}, the remaining words", item.name()),
        Kind::Array(item) => format!("array of {}, repeat the flag", item.name()),
        Kind::Boolean => "boolean flag".into(),
        kind => kind.name(),
    }];
    if p.required {
        facts.push("required".into());
    }
    // A `null` default is no default: the parameter is simply left out.
    if let Some(default) = p.default.as_ref().filter(|d| !d.is_null()) {
        facts.push(format!("default {}", word_of(default)));
    }
    let mut text = facts.join(", ");
    if !p.description.is_empty() {
        let _ = write!(text, ". {}", p.description);
    }
    text
}

#[cfg(test)]
mod tests;
