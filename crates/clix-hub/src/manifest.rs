//! The manifest model and its validation from a parsed document.
//!
//! A manifest is read into a `serde_json::Value` first (whatever its file
//! format), then checked field by field here, so every problem can name its
//! field and a fix instead of a serde error position. Nothing here touches
//! the file system: the command's existence is checked by the loader.

use std::collections::BTreeMap;

use clix_command::flags::typed::{Kind, Param, kind_of as kind, show};
use clix_common::names::{UnknownField, did_you_mean};
use serde::Serialize;
use serde_json::{Map, Value};

use crate::problem::FieldProblem;

/// The type of a parameter. Kept narrow, as the seed says.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ParamType {
    /// Any text, passed as written.
    String,
    /// A whole number (`-5`, `100`).
    Integer,
    /// A whole or decimal number (`0.25`).
    Number,
    /// A bare `--name` flag when true, nothing when false.
    Boolean,
    /// A list of scalars, mapped to a repeated flag.
    Array,
    /// One of the parameter's `values`.
    Enum,
}

impl ParamType {
    /// How a manifest writes each type, in the order of the variants.
    pub(crate) const NAMES: [&'static str; 6] = ["string", "integer", "number", "boolean", "array", "enum"];

    /// The type a manifest's `type` field names, if it is one.
    pub(crate) fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "string" => Self::String,
            "integer" => Self::Integer,
            "number" => Self::Number,
            "boolean" => Self::Boolean,
            "array" => Self::Array,
            "enum" => Self::Enum,
            _ => return None,
        })
    }

    /// How a manifest and the usage write this type.
    pub fn as_str(self) -> &'static str {
        Self::NAMES[self as usize]
    }
}

/// One declared parameter of a tool.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Parameter {
    /// The flag's name without dashes (`keyword` is `--keyword`), also the
    /// key of a call's JSON arguments.
    pub name: String,
    /// What values it takes, checked before the tool runs.
    #[serde(rename = "type")]
    pub ty: ParamType,
    /// A call without it (and without a `default`) is a parameter error.
    pub required: bool,
    /// The value used when a call does not give one; checked against `ty` at load.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub default: Option<Value>,
    /// One line for the usage; empty when the manifest gives none.
    pub description: String,
    /// Passed as a bare argument (after all flags, in declared order) instead of `--name value`.
    pub positional: bool,
    /// The allowed values of an `enum` parameter.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub values: Vec<String>,
}

/// What the tool prints on stdout on success.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum OutputFormat {
    /// Pure JSON (the seed's contract), optionally checked against `schema`.
    Json,
    /// Plain text, passed through.
    Text,
}

/// The manifest's `output`: what a successful call's stdout must be.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Output {
    /// JSON (the default) or plain text.
    pub format: OutputFormat,
    /// A JSON Schema the JSON output must satisfy (checked at load and on every call).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
}

impl Default for Output {
    fn default() -> Self {
        Self { format: OutputFormat::Json, schema: None }
    }
}

/// A validated tool manifest: the seed's fields plus ours.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Manifest {
    /// The command the tool is called by (`log-search`), unique in a session.
    pub name: String,
    /// The tool's version as the manifest states it; a different one printed
    /// by `version_args` is reported as drift.
    pub version: String,
    /// What the tool is for, shown in `hub list` and searched by `hub search`.
    pub description: String,
    /// As written: a path relative to the manifest's folder, an absolute path, or a name on PATH.
    pub command: String,
    /// The flags and positional arguments a call may give, in declared order.
    pub parameters: Vec<Parameter>,
    /// What stdout must be on success.
    pub output: Output,
    /// What the tool says it needs (`read:logs`), shown by `hub info`; not enforced.
    pub permissions: Vec<String>,
    /// Longest a call may run, in milliseconds (30 s when absent; a session's
    /// own limit may cut it shorter).
    pub timeout_ms: Option<u64>,
    /// The folder calls run in, relative to the manifest's folder; absent:
    /// the session's current folder.
    pub cwd: Option<String>,
    /// Variables set for the tool, each `${NAME}` filled from `[hub.env]`.
    pub env: BTreeMap<String, String>,
    /// A group of tools a session can be limited to (`--domain`).
    pub domain: Option<String>,
    /// Example command lines, shown in the usage.
    pub examples: Vec<String>,
    /// Arguments of the self-test run; `None` when disabled with `self_test: false`.
    pub self_test: Option<Vec<String>>,
    /// Arguments that make the tool print its version; `None` when disabled.
    pub version_args: Option<Vec<String>>,
    /// Only one call of this tool at a time.
    pub serialize: bool,
    /// Calls per minute.
    pub rate_limit: Option<u32>,
    /// Whether the sandbox gives the tool network access.
    pub network: bool,
}

impl Parameter {
    /// The parameter as the one flag grammar reads it.
    pub fn as_param(&self) -> Param {
        Param {
            name: self.name.clone(),
            kind: ParamType::kind(self.ty, &self.values),
            required: self.required,
            default: self.default.clone(),
            positional: self.positional,
            description: self.description.clone(),
        }
    }
}

impl ParamType {
    /// What a parameter of this type (an enum's `values` given) takes: an
    /// array's items are scalars, a flag's word being text.
    fn kind(self, values: &[String]) -> Kind {
        match self {
            ParamType::String => Kind::String,
            ParamType::Integer => Kind::Integer,
            ParamType::Number => Kind::Number,
            ParamType::Boolean => Kind::Boolean,
            ParamType::Array => Kind::Array(Box::new(Kind::Scalar)),
            ParamType::Enum => Kind::Enum(values.iter().map(|v| Value::String(v.clone())).collect()),
        }
    }
}

impl Manifest {
    /// The declared parameter of that name.
    pub fn parameter(&self, name: &str) -> Option<&Parameter> {
        self.parameters.iter().find(|p| p.name == name)
    }
}

const TOP_FIELDS: &[&str] = &[
    "name",
    "version",
    "description",
    "command",
    "parameters",
    "output",
    "permissions",
    "timeout_ms",
    "cwd",
    "env",
    "domain",
    "examples",
    "self_test",
    "version_args",
    "serialize",
    "rate_limit",
    "network",
];
const PARAM_FIELDS: &[&str] = &["name", "type", "required", "default", "description", "positional", "values"];
const OUTPUT_FIELDS: &[&str] = &["format", "schema"];

/// Names a parameter may not take: `--help` is the generated usage.
const RESERVED_PARAMS: &[&str] = &["help"];

/// Check a parsed manifest document. Returns every problem found, not just the first.
pub(crate) fn from_value(doc: &Value) -> Result<Manifest, Vec<FieldProblem>> {
    let mut c = Checker { problems: Vec::new() };
    let Some(obj) = doc.as_object() else {
        return Err(vec![FieldProblem::new(
            "",
            format!("the manifest must be an object of fields, found {}", kind(doc)),
            "write one tool per file as an object with at least name, version, description and command",
        )]);
    };
    c.unknown_fields(obj, "", TOP_FIELDS);

    let name = c.req_str(obj, "name", "name");
    if let Some(n) = &name
        && !is_tool_name(n)
    {
        c.push(
            "name",
            format!("`{n}` is not a valid command name"),
            "use letters, digits, `-`, `_` or `.`, starting with a letter or digit (e.g. \"log-search\")",
        );
    }
    let version = c.req_str(obj, "version", "version");
    let description = c.req_str(obj, "description", "description");
    let command = c.req_str(obj, "command", "command");

    let parameters = c.parameters(obj.get("parameters"));
    let output = c.output(obj.get("output"));
    let permissions = c.str_list(obj.get("permissions"), "permissions").unwrap_or_default();
    let timeout_ms = c.positive(obj.get("timeout_ms"), "timeout_ms", "a number of milliseconds, e.g. 30000");
    let cwd = c.opt_str(obj.get("cwd"), "cwd");
    if let Some(dir) = &cwd
        && (std::path::Path::new(dir).is_absolute() || dir.split('/').any(|part| part == ".."))
    {
        c.push("cwd", "must be a folder inside the tool's folder", "write a relative path without `..`, e.g. \"data\"");
    }
    let env = c.env(obj.get("env"));
    let domain = c.opt_str(obj.get("domain"), "domain");
    let examples = c.str_list(obj.get("examples"), "examples").unwrap_or_default();
    let self_test = c.args_or_false(obj.get("self_test"), "self_test", "--self-test");
    let version_args = c.args_or_false(obj.get("version_args"), "version_args", "--version");
    let serialize = c.opt_bool(obj.get("serialize"), "serialize").unwrap_or(false);
    let rate_limit =
        c.positive(obj.get("rate_limit"), "rate_limit", "a number of calls per minute, e.g. 60").and_then(|n| {
            match u32::try_from(n) {
                Ok(n) => Some(n),
                Err(_) => {
                    c.push("rate_limit", "is too large", "give at most 4294967295 calls per minute");
                    None
                }
            }
        });
    let network = c.opt_bool(obj.get("network"), "network").unwrap_or(false);

    if !c.problems.is_empty() {
        return Err(c.problems);
    }
    Ok(Manifest {
        name: name.unwrap_or_default(),
        version: version.unwrap_or_default(),
        description: description.unwrap_or_default(),
        command: command.unwrap_or_default(),
        parameters,
        output,
        permissions,
        timeout_ms,
        cwd,
        env,
        domain,
        examples,
        self_test,
        version_args,
        serialize,
        rate_limit,
        network,
    })
}

/// A command name the shell can call: `[A-Za-z0-9][A-Za-z0-9._-]*`.
pub(crate) fn is_tool_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

fn is_param_name(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphanumeric())
        && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_'))
}

struct Checker {
    problems: Vec<FieldProblem>,
}

impl Checker {
    fn push(&mut self, field: &str, message: impl Into<String>, fix: impl Into<String>) {
        self.problems.push(FieldProblem::new(field, message, fix));
    }

    fn unknown_fields(&mut self, obj: &Map<String, Value>, prefix: &str, known: &[&str]) {
        for unknown in UnknownField::among(obj.keys().map(String::as_str), known) {
            self.push(&format!("{prefix}{}", unknown.field), "unknown field", unknown.hint());
        }
    }

    fn req_str(&mut self, obj: &Map<String, Value>, key: &str, field: &str) -> Option<String> {
        match obj.get(key) {
            None | Some(Value::Null) => {
                self.push(field, "missing required field", format!("add `{key}` (a string)"));
                None
            }
            v => self.opt_str(v, field),
        }
    }

    fn opt_str(&mut self, v: Option<&Value>, field: &str) -> Option<String> {
        match v {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) if s.trim().is_empty() => {
                self.push(field, "must not be empty", "give it a value or remove the field");
                None
            }
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => {
                self.push(field, format!("expected a string, found {}", kind(other)), "write it as a quoted string");
                None
            }
        }
    }

    fn opt_bool(&mut self, v: Option<&Value>, field: &str) -> Option<bool> {
        match v {
            None | Some(Value::Null) => None,
            Some(Value::Bool(b)) => Some(*b),
            Some(other) => {
                self.push(
                    field,
                    format!("expected a boolean, found {}", kind(other)),
                    "write true or false (unquoted)",
                );
                None
            }
        }
    }

    fn positive(&mut self, v: Option<&Value>, field: &str, what: &str) -> Option<u64> {
        match v {
            None | Some(Value::Null) => None,
            Some(Value::Number(n)) if n.as_u64().is_some_and(|n| n > 0) => n.as_u64(),
            Some(other) => {
                self.push(field, format!("expected a positive integer, found {}", show(other)), format!("give {what}"));
                None
            }
        }
    }

    fn str_list(&mut self, v: Option<&Value>, field: &str) -> Option<Vec<String>> {
        match v {
            None | Some(Value::Null) => None,
            Some(Value::Array(items)) => {
                let mut out = Vec::with_capacity(items.len());
                for (i, item) in items.iter().enumerate() {
                    match item {
                        Value::String(s) => out.push(s.clone()),
                        other => self.push(
                            &format!("{field}[{i}]"),
                            format!("expected a string, found {}", kind(other)),
                            "write each entry as a quoted string",
                        ),
                    }
                }
                Some(out)
            }
            Some(other) => {
                self.push(
                    field,
                    format!("expected an array of strings, found {}", kind(other)),
                    "write it as a list, e.g. [\"a\", \"b\"]",
                );
                None
            }
        }
    }

    /// `self_test` / `version_args`: a list of arguments, or `false` to disable.
    fn args_or_false(&mut self, v: Option<&Value>, field: &str, default: &str) -> Option<Vec<String>> {
        match v {
            None | Some(Value::Null) => Some(vec![default.to_string()]),
            Some(Value::Bool(false)) => None,
            Some(Value::Bool(true)) => Some(vec![default.to_string()]),
            Some(Value::String(s)) => {
                self.push(
                    field,
                    "expected a list of arguments, found a string",
                    format!("write it as a list, e.g. [\"{default}\"] (no shell splits it), or false to disable"),
                );
                let _ = s;
                None
            }
            v => self.str_list(v, field),
        }
    }

    fn env(&mut self, v: Option<&Value>) -> BTreeMap<String, String> {
        let mut out = BTreeMap::new();
        match v {
            None | Some(Value::Null) => {}
            Some(Value::Object(map)) => {
                for (k, val) in map {
                    let field = format!("env.{k}");
                    if !clix_sandbox::is_variable_name(k) {
                        self.push(
                            &field,
                            "is not a valid variable name",
                            "use letters, digits and `_`, not starting with a digit",
                        );
                    }
                    match val {
                        Value::String(s) => {
                            out.insert(k.clone(), s.clone());
                        }
                        other => self.push(
                            &field,
                            format!("expected a string, found {}", kind(other)),
                            "quote the value, e.g. \"1\"",
                        ),
                    }
                }
            }
            Some(other) => self.push(
                "env",
                format!("expected an object of NAME: value, found {}", kind(other)),
                "write it as {\"NAME\": \"value\"}",
            ),
        }
        out
    }

    fn output(&mut self, v: Option<&Value>) -> Output {
        let obj = match v {
            None | Some(Value::Null) => return Output::default(),
            Some(Value::Object(obj)) => obj,
            Some(other) => {
                self.push(
                    "output",
                    format!("expected an object, found {}", kind(other)),
                    "write it as {\"format\": \"json\", \"schema\": {...}}",
                );
                return Output::default();
            }
        };
        self.unknown_fields(obj, "output.", OUTPUT_FIELDS);
        let format = match self.opt_str(obj.get("format"), "output.format").as_deref() {
            None | Some("json") => OutputFormat::Json,
            Some("text") => OutputFormat::Text,
            Some(other) => {
                self.push(
                    "output.format",
                    format!("unknown format `{other}`"),
                    "use \"json\" (the default) or \"text\"",
                );
                OutputFormat::Json
            }
        };
        let schema = match obj.get("schema") {
            None | Some(Value::Null) => None,
            Some(schema) => {
                if format == OutputFormat::Text {
                    self.push(
                        "output.schema",
                        "a schema needs JSON output",
                        "remove the schema or set format to \"json\"",
                    );
                }
                self.schema(schema);
                Some(schema.clone())
            }
        };
        Output { format, schema }
    }

    fn schema(&mut self, schema: &Value) {
        if !matches!(schema, Value::Object(_) | Value::Bool(_)) {
            self.push(
                "output.schema",
                format!("a JSON Schema is an object or a boolean, found {}", kind(schema)),
                "write a schema object, e.g. {\"type\": \"array\"}",
            );
            return;
        }
        if let Err(e) = jsonschema::meta::validate(schema) {
            let at = e.instance_path().to_string();
            let field = if at.is_empty() { "output.schema".to_string() } else { format!("output.schema{at}") };
            self.push(&field, format!("not a valid JSON Schema: {e}"), "correct the schema (see json-schema.org)");
            return;
        }
        if let Err(e) = jsonschema::validator_for(schema) {
            self.push(
                "output.schema",
                format!("the schema cannot be used: {e}"),
                "correct the schema (see json-schema.org)",
            );
        }
    }

    fn parameters(&mut self, v: Option<&Value>) -> Vec<Parameter> {
        let items = match v {
            None | Some(Value::Null) => return Vec::new(),
            Some(Value::Array(items)) => items,
            Some(other) => {
                self.push(
                    "parameters",
                    format!("expected an array of parameters, found {}", kind(other)),
                    "write it as a list: [{\"name\": \"keyword\", \"type\": \"string\"}]",
                );
                return Vec::new();
            }
        };
        let mut params: Vec<Parameter> = Vec::new();
        for (i, item) in items.iter().enumerate() {
            let at = format!("parameters[{i}]");
            if let Some(p) = self.parameter(item, &at) {
                if params.iter().any(|q| q.name == p.name) {
                    self.push(
                        &format!("{at}.name"),
                        format!("parameter `{}` is declared twice", p.name),
                        "rename or remove one",
                    );
                    continue;
                }
                params.push(p);
            }
        }
        // A positional array takes all remaining bare arguments, so it must come last.
        let positionals: Vec<&Parameter> = params.iter().filter(|p| p.positional).collect();
        if let Some(pos) = positionals.iter().position(|p| p.ty == ParamType::Array)
            && pos + 1 != positionals.len()
        {
            let name = &positionals[pos].name;
            self.push(
                "parameters",
                format!("positional array `{name}` is not the last positional parameter"),
                "declare it after every other positional parameter",
            );
        }
        params
    }

    fn parameter(&mut self, v: &Value, at: &str) -> Option<Parameter> {
        let Some(obj) = v.as_object() else {
            self.push(
                at,
                format!("expected a parameter object, found {}", kind(v)),
                "write it as {\"name\": \"keyword\", \"type\": \"string\"}",
            );
            return None;
        };
        let before = self.problems.len();
        self.unknown_fields(obj, &format!("{at}."), PARAM_FIELDS);
        let name = self.req_str(obj, "name", &format!("{at}.name"));
        if let Some(n) = &name {
            if !is_param_name(n) {
                self.push(
                    &format!("{at}.name"),
                    format!("`{n}` is not a valid flag name"),
                    "use letters, digits, `-` and `_`, starting with a letter or digit",
                );
            } else if RESERVED_PARAMS.contains(&n.as_str()) {
                self.push(&format!("{at}.name"), format!("`{n}` is reserved for the generated usage"), "rename it");
            }
        }
        let ty = match self.req_str(obj, "type", &format!("{at}.type")) {
            Some(t) => match ParamType::parse(&t) {
                Some(ty) => Some(ty),
                None => {
                    let fix = match did_you_mean(&t, ParamType::NAMES) {
                        Some(s) => format!("did you mean \"{s}\"? types: {}", ParamType::NAMES.join(", ")),
                        None => format!("use one of: {}", ParamType::NAMES.join(", ")),
                    };
                    self.push(&format!("{at}.type"), format!("unknown type `{t}`"), fix);
                    None
                }
            },
            None => None,
        };
        let required = self.opt_bool(obj.get("required"), &format!("{at}.required")).unwrap_or(false);
        let positional = self.opt_bool(obj.get("positional"), &format!("{at}.positional")).unwrap_or(false);
        let description = self.opt_str(obj.get("description"), &format!("{at}.description")).unwrap_or_default();
        let values = self.str_list(obj.get("values"), &format!("{at}.values"));
        let values = match (ty, values) {
            (Some(ParamType::Enum), None) => {
                self.push(&format!("{at}.values"), "an enum needs its values", "add \"values\": [\"a\", \"b\"]");
                Vec::new()
            }
            (Some(ParamType::Enum), Some(v)) if v.is_empty() => {
                self.push(&format!("{at}.values"), "an enum needs at least one value", "list the allowed values");
                v
            }
            (Some(t), Some(_)) if t != ParamType::Enum => {
                self.push(
                    &format!("{at}.values"),
                    format!("`values` only applies to enum parameters, this one is {}", t.as_str()),
                    "set \"type\": \"enum\" or remove `values`",
                );
                Vec::new()
            }
            (_, v) => v.unwrap_or_default(),
        };
        if positional && ty == Some(ParamType::Boolean) {
            self.push(
                &format!("{at}.positional"),
                "a boolean cannot be positional",
                "remove `positional`: a boolean is a --flag",
            );
        }
        let default = match obj.get("default") {
            None | Some(Value::Null) => None,
            Some(d) => {
                if let Some(ty) = ty
                    && let Err(msg) = ParamType::kind(ty, &values).check(d)
                {
                    self.push(&format!("{at}.default"), msg, format!("give a default of type {}", ty.as_str()));
                }
                Some(d.clone())
            }
        };
        if self.problems.len() > before {
            return None;
        }
        Some(Parameter { name: name?, ty: ty?, required, default, description, positional, values })
    }
}

#[cfg(test)]
mod tests;
