//! The `[agent]` section, and which provider the environment points at.

use std::collections::BTreeMap;
use std::time::Duration;

use clix_common::Secret;
use clix_common::names::did_you_mean;
use clix_common::settings::{BadValue, Validate, at_least_one, seconds};
use serde::{Deserialize, Serialize};

use crate::price::ModelPrice;
use crate::provider::Usage;

/// Default when nothing is configured: a local Ollama.
pub(crate) const OLLAMA_URL: &str = "http://127.0.0.1:11434/v1";
const OPENAI_URL: &str = "https://api.openai.com/v1";
const ANTHROPIC_URL: &str = "https://api.anthropic.com";

/// Which API an endpoint speaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ProviderKind {
    /// Any OpenAI-compatible Chat Completions endpoint.
    #[serde(rename = "openai")]
    OpenAi,
    /// The Anthropic Messages API.
    Anthropic,
}

/// Settings of the agent loop. Every budget is bounded.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AgentSettings {
    /// "auto" (from the environment), "openai" or "anthropic".
    pub provider: String,
    /// Empty: from the environment, else the provider's default.
    pub base_url: String,
    /// Empty: from the environment (`AGENT_MODEL`), else the provider's default.
    pub model: String,
    /// How much the agent may change (`--mode`): `auto` (changes stay,
    /// each call checkpointed), `review` (each call's changes kept only when
    /// the person says yes), `read-only` (nothing can change).
    pub mode: clix_engine::WorkMode,
    /// Prefer the environment (AGENT_API_KEY, OPENAI_API_KEY, ANTHROPIC_API_KEY).
    /// Shown as `***` (Debug, `clix config show`); empty when unset.
    pub api_key: Secret,
    /// Stream replies (OpenAI-compatible); an empty streamed reply is retried unstreamed.
    pub stream: bool,
    /// Model calls of one task (`--max-steps`).
    pub max_steps: u32,
    /// Input plus output tokens over the whole run.
    pub max_total_tokens: u64,
    /// Wall time of one task, in seconds.
    pub max_wall_secs: u64,
    /// Time of one model call, in seconds.
    pub model_call_secs: u64,
    /// Tries of one model call, the first included.
    pub model_call_tries: u32,
    /// The cap on one reply's length, in tokens.
    pub max_output_tokens: u32,
    /// The model's context window, in tokens.
    pub context_window: u64,
    /// Share of the window at which the oldest turns are summarized.
    pub compact_at: f64,
    /// Messages always kept verbatim at the end of the conversation.
    pub keep_last_messages: usize,
    /// A first answer given before any tool ran in the conversation is
    /// asked again, once, with a tool call required (`tool_choice:
    /// required`), so the model looks instead of guessing: one more model
    /// call on such answers, the guess left out of the conversation. On by
    /// default: asked again so, Qwen2.5-Coder-1.5B looked in every attempt
    /// (a note asking it to look was ignored in all 8 it was sent); a
    /// greeting costs one call more (docs/eval.md).
    pub look_first: bool,
    /// An answer given right after a call failed (a non-zero exit, a
    /// refused call) is asked again, once a run, with a tool call
    /// required: small models stop at the first error and explain it
    /// instead of fixing the command (Qwen2.5-Coder-1.5B in 11 of the 34
    /// bashkit-eval runs it failed, docs/eval.md). On by default; one more
    /// model call when the failure was the answer.
    pub retry_failed: bool,
    /// The sampling temperature sent with every model call; negative (the
    /// default, -1) sends none, so the provider's own default holds
    /// (llama.cpp's server: 0.8). 0 makes a local model's replies
    /// repeatable, which `clix eval` needs to compare two versions
    /// attempt by attempt. (A number, not an `Option`: the config file
    /// knows its keys from the defaults.)
    pub temperature: f64,
    /// Prices per model, per million tokens (`[agent.prices."<model>"]`
    /// with `input`, `cached_input`, `cache_write`, `output`): a run of a
    /// model named here shows and records its cost. None are built in.
    pub prices: BTreeMap<String, ModelPrice>,
    /// The currency the prices are in, shown beside every cost.
    pub currency: String,
    /// The project's notes: a notes file of each folder from the workspace
    /// root down to the working folder joins the system prompt, introduced
    /// as the project's (at most 32 KiB together). `false` (or `clix ask
    /// --no-agents-md`) leaves them out.
    pub project_notes: bool,
    /// The names a folder's notes file may have, the first found read:
    /// `AGENTS.md`, else `CLAUDE.md`, else `GEMINI.md` (projects made for
    /// one agent carry only its own).
    pub project_notes_files: Vec<String>,
}

impl Default for AgentSettings {
    fn default() -> Self {
        AgentSettings {
            provider: "auto".into(),
            base_url: String::new(),
            model: String::new(),
            mode: clix_engine::WorkMode::Auto,
            api_key: Secret::default(),
            stream: true,
            max_steps: 50,
            max_total_tokens: 2_000_000,
            max_wall_secs: 600,
            model_call_secs: 60,
            model_call_tries: 5,
            max_output_tokens: 4096,
            context_window: 128_000,
            compact_at: 0.8,
            keep_last_messages: 8,
            look_first: true,
            retry_failed: true,
            temperature: -1.0,
            prices: BTreeMap::new(),
            currency: "USD".into(),
            project_notes: true,
            project_notes_files: crate::prompt::PROJECT_NOTES_FILES.iter().map(|s| s.to_string()).collect(),
        }
    }
}

/// What `provider` (and `--provider`) may name, and how to say so.
const PROVIDERS: [&str; 3] = ["auto", "openai", "anthropic"];
const PROVIDER_CHOICES: &str = "\"auto\", \"openai\" (any OpenAI-compatible API) or \"anthropic\"";

impl Validate for AgentSettings {
    /// Every budget must let a task make a call; the compaction point is a
    /// share of the window; the provider and endpoint are ones clix speaks to.
    fn validate(&self) -> Vec<BadValue> {
        let mut bad: Vec<BadValue> = [
            at_least_one("max_steps", self.max_steps.into(), "model calls of one task"),
            at_least_one("max_total_tokens", self.max_total_tokens, "tokens of one task"),
            seconds("max_wall_secs", self.max_wall_secs, "of one task"),
            seconds("model_call_secs", self.model_call_secs, "of one model call"),
            at_least_one("model_call_tries", self.model_call_tries.into(), "tries, the first included"),
            at_least_one("max_output_tokens", self.max_output_tokens.into(), "tokens of one reply"),
            at_least_one("context_window", self.context_window, "tokens"),
        ]
        .into_iter()
        .flatten()
        .collect();
        if !(self.provider.is_empty() || PROVIDERS.contains(&self.provider.as_str())) {
            let near =
                did_you_mean(&self.provider, PROVIDERS).map(|n| format!("; did you mean \"{n}\"?")).unwrap_or_default();
            bad.push(BadValue::new("provider", format!("{:?}", self.provider), format!("{PROVIDER_CHOICES}{near}")));
        }
        if !(self.base_url.is_empty() || self.base_url.starts_with("http://") || self.base_url.starts_with("https://"))
        {
            bad.push(BadValue::new("base_url", format!("{:?}", self.base_url), "empty, or an http:// or https:// URL"));
        }
        if !(self.compact_at > 0.0 && self.compact_at <= 1.0) {
            bad.push(BadValue::new("compact_at", self.compact_at, "a share of the window above 0, at most 1 (0.8)"));
        }
        if !self.temperature.is_finite() {
            bad.push(BadValue::new("temperature", self.temperature, "a number (negative: the provider's default)"));
        }
        bad.extend(self.prices.iter().flat_map(|(model, price)| price.validate(model)));
        bad
    }
}

/// The limits of one run, taken from the settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Budgets {
    /// Model calls of one task.
    pub max_steps: u32,
    /// Input plus output tokens of one task.
    pub max_total_tokens: u64,
    /// Time of one task.
    pub wall: Duration,
    /// Time of one model call.
    pub model_call: Duration,
}

impl AgentSettings {
    /// The temperature to send, if any (`agent.temperature` when not negative).
    pub fn temperature(&self) -> Option<f64> {
        (self.temperature >= 0.0).then_some(self.temperature)
    }

    /// What `usage` of `model` cost, when the person set its prices.
    pub fn cost(&self, model: &str, usage: &Usage) -> Option<f64> {
        self.prices.get(model).map(|price| price.cost(usage))
    }

    /// The limits of one run.
    pub fn budgets(&self) -> Budgets {
        Budgets {
            max_steps: self.max_steps,
            max_total_tokens: self.max_total_tokens,
            wall: Duration::from_secs(self.max_wall_secs),
            model_call: Duration::from_secs(self.model_call_secs),
        }
    }
}

/// Where the model calls go.
#[derive(Debug, Clone, PartialEq)]
pub struct ResolvedProvider {
    /// Which API the endpoint speaks.
    pub kind: ProviderKind,
    /// The endpoint, e.g. `http://127.0.0.1:11434/v1` (a local Ollama).
    pub base_url: String,
    /// Sent as the bearer token (`x-api-key` for Anthropic); `None` for a
    /// local server that needs none.
    pub api_key: Option<Secret>,
    /// The model's name as the provider knows it.
    pub model: String,
    /// Stream replies (OpenAI-compatible).
    pub stream: bool,
    /// The sampling temperature to send; `None` leaves the provider's default.
    pub temperature: Option<f64>,
    /// The environment variables the key, the endpoint and the model came
    /// from, each as `(setting, variable)`: `config show` shows them in
    /// force, and a refused key names its variable.
    pub from_env: Vec<(&'static str, &'static str)>,
    /// Nothing configured the endpoint: it is clix's fallback, a local
    /// Ollama. A refused connection there is no blip to retry but nothing
    /// set up, and stops at once with how to configure a model.
    pub default_endpoint: bool,
}

/// The variables [`resolve_provider`] reads besides the `CLIX_AGENT_*`
/// layer, each with the setting it fills (`clix config show` lists them).
pub const PROVIDER_VARS: [(&str, &str); 6] = [
    ("AGENT_API_KEY", "agent.api_key"),
    ("AGENT_BASE_URL", "agent.base_url"),
    ("AGENT_MODEL", "agent.model"),
    ("OPENAI_API_KEY", "agent.api_key (provider openai)"),
    ("OPENAI_BASE_URL", "agent.base_url (provider openai)"),
    ("ANTHROPIC_API_KEY", "agent.api_key (provider anthropic)"),
];

/// A provider kind clix does not speak (`--provider` or `agent.provider`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unknown provider {0:?}; use {PROVIDER_CHOICES}")]
pub struct UnknownProvider(pub String);

/// Flags beat the environment, which beats the file: `AGENT_*` (seed 003),
/// then `OPENAI_*` / `ANTHROPIC_API_KEY`, then `[agent]`. With nothing set,
/// a local Ollama at `http://127.0.0.1:11434/v1`.
pub fn resolve_provider(
    s: &AgentSettings,
    env: impl Fn(&str) -> Option<String>,
    flag_model: Option<&str>,
    flag_provider: Option<&str>,
) -> Result<ResolvedProvider, UnknownProvider> {
    let env = |k: &str| env(k).filter(|v| !v.trim().is_empty());
    let file = |v: &str| (!v.is_empty()).then(|| v.to_string());
    let kind = match flag_provider.unwrap_or(&s.provider) {
        "openai" => ProviderKind::OpenAi,
        "anthropic" => ProviderKind::Anthropic,
        "auto" | "" => {
            let generic =
                env("AGENT_API_KEY").is_some() || env("AGENT_BASE_URL").is_some() || env("OPENAI_API_KEY").is_some();
            if !generic && env("ANTHROPIC_API_KEY").is_some() { ProviderKind::Anthropic } else { ProviderKind::OpenAi }
        }
        other => return Err(UnknownProvider(other.to_string())),
    };
    let (key_var, url_var) = match kind {
        ProviderKind::OpenAi => ("OPENAI_API_KEY", Some("OPENAI_BASE_URL")),
        ProviderKind::Anthropic => ("ANTHROPIC_API_KEY", None),
    };
    let mut from_env = Vec::new();
    // The first of `vars` that is set, noted as the source of `setting`.
    let mut first_set = |setting: &'static str, vars: &[&'static str]| {
        let (var, value) = vars.iter().find_map(|var| env(var).map(|value| (*var, value)))?;
        from_env.push((setting, var));
        Some(value)
    };
    let api_key = first_set("agent.api_key", &["AGENT_API_KEY", key_var])
        .map(Secret::new)
        .or_else(|| (!s.api_key.is_empty()).then(|| s.api_key.clone()));
    let url_vars: &[&'static str] = match url_var {
        Some(url_var) => &["AGENT_BASE_URL", url_var],
        None => &["AGENT_BASE_URL"],
    };
    let configured_url = first_set("agent.base_url", url_vars).or_else(|| file(&s.base_url));
    let default_endpoint = configured_url.is_none() && kind == ProviderKind::OpenAi && api_key.is_none();
    let base_url = configured_url.unwrap_or_else(|| match (kind, &api_key) {
        (ProviderKind::Anthropic, _) => ANTHROPIC_URL.into(),
        (ProviderKind::OpenAi, Some(_)) => OPENAI_URL.into(),
        (ProviderKind::OpenAi, None) => OLLAMA_URL.into(),
    });
    let model_from_env = if flag_model.is_none() { first_set("agent.model", &["AGENT_MODEL"]) } else { None };
    let model =
        flag_model.map(str::to_string).or(model_from_env).or_else(|| file(&s.model)).unwrap_or_else(|| {
            match (kind, base_url.as_str()) {
                (ProviderKind::Anthropic, _) => "claude-sonnet-4-5".into(),
                (ProviderKind::OpenAi, OPENAI_URL) => "gpt-4o-mini".into(),
                (ProviderKind::OpenAi, _) => "qwen2.5-coder:7b".into(),
            }
        });
    Ok(ResolvedProvider {
        kind,
        base_url,
        api_key,
        model,
        stream: s.stream,
        temperature: s.temperature(),
        from_env,
        default_endpoint,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn resolve(env: &[(&str, &str)], s: &AgentSettings, model: Option<&str>) -> ResolvedProvider {
        let env: HashMap<String, String> = env.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        resolve_provider(s, |k| env.get(k).cloned(), model, None).unwrap()
    }

    #[test]
    fn the_key_is_read_but_never_shown() {
        let s: AgentSettings = serde_json::from_str(r#"{"api_key": "sk-secret-value"}"#).unwrap();
        assert_eq!(s.api_key.expose(), "sk-secret-value");
        let r = resolve(&[("OPENAI_API_KEY", "sk-very-secret")], &AgentSettings::default(), None);
        for shown in [format!("{s:?}"), format!("{r:?}"), serde_json::to_string(&s).unwrap()] {
            assert!(shown.contains("***") && !shown.contains("-secret"), "{shown}");
        }
        // The layered config learns the settings' shape from the defaults:
        // an unset key must read back unset, not as "***".
        let defaults = serde_json::to_value(AgentSettings::default()).unwrap();
        assert_eq!(defaults["api_key"], "");
        assert!(serde_json::from_value::<AgentSettings>(defaults).unwrap().api_key.is_empty());
    }

    #[test]
    fn precedence_table() {
        let d = AgentSettings::default();
        let r = resolve(&[], &d, None);
        assert_eq!(
            (r.kind, r.base_url.as_str(), r.api_key.as_ref().map(Secret::expose), r.default_endpoint),
            (ProviderKind::OpenAi, OLLAMA_URL, None, true)
        );
        // Only the fallback is the default endpoint: the same address set by
        // the person, or a key that picks a provider's own, is not.
        for env in [[("AGENT_BASE_URL", OLLAMA_URL)], [("OPENAI_BASE_URL", OLLAMA_URL)], [("OPENAI_API_KEY", "k")]] {
            assert!(!resolve(&env, &d, None).default_endpoint, "{env:?}");
        }
        let file = AgentSettings { base_url: OLLAMA_URL.into(), ..d.clone() };
        assert!(!resolve(&[], &file, None).default_endpoint);
        assert!(!resolve(&[("ANTHROPIC_API_KEY", "k")], &d, None).default_endpoint);

        let r = resolve(&[("OPENAI_API_KEY", "k1")], &d, None);
        assert_eq!((r.base_url.as_str(), r.model.as_str()), (OPENAI_URL, "gpt-4o-mini"));

        let r = resolve(&[("ANTHROPIC_API_KEY", "k2")], &d, None);
        assert_eq!(
            (r.kind, r.base_url.as_str(), r.api_key.as_ref().map(Secret::expose)),
            (ProviderKind::Anthropic, ANTHROPIC_URL, Some("k2"))
        );

        let file = AgentSettings { base_url: "http://file/v1".into(), model: "file-model".into(), ..d.clone() };
        let env = [
            ("AGENT_BASE_URL", "http://env/v1"),
            ("AGENT_MODEL", "env-model"),
            ("AGENT_API_KEY", "k3"),
            ("OPENAI_API_KEY", "k4"),
        ];
        let r = resolve(&env, &file, None);
        assert_eq!(
            (r.base_url.as_str(), r.model.as_str(), r.api_key.as_ref().map(Secret::expose)),
            ("http://env/v1", "env-model", Some("k3"))
        );
        let r = resolve(&env, &file, Some("flag-model"));
        assert_eq!(r.model, "flag-model");
        let r = resolve(&[], &file, None);
        assert_eq!((r.base_url.as_str(), r.model.as_str()), ("http://file/v1", "file-model"));

        let keyed = AgentSettings { api_key: Secret::new("k5"), ..d.clone() };
        assert_eq!(resolve(&[], &keyed, None).api_key.as_ref().map(Secret::expose), Some("k5"));
        let r = resolve(&[("OPENAI_API_KEY", "k6")], &keyed, None);
        assert_eq!(r.api_key.as_ref().map(Secret::expose), Some("k6"), "the environment beats the file");
    }

    /// Each variable `clix config show` says the provider reads changes what it resolves.
    #[test]
    fn every_provider_variable_is_read() {
        let d = AgentSettings::default();
        let base = resolve(&[], &d, None);
        for (name, _) in PROVIDER_VARS {
            let value = if name.ends_with("_URL") { "http://set/v1" } else { "set" };
            assert_ne!(resolve(&[(name, value)], &d, None), base, "{name}");
        }
    }

    /// (the settings, every value refused) — and the defaults are allowed.
    #[test]
    fn budgets_that_allow_no_call_and_unknown_endpoints_are_refused() {
        let d = AgentSettings::default;
        let cases = [
            (d(), vec![]),
            (AgentSettings { max_steps: 0, ..d() }, vec!["max_steps = 0: at least 1 (model calls of one task)"]),
            (
                AgentSettings { model_call_secs: 0, max_wall_secs: u64::MAX, model_call_tries: 0, ..d() },
                vec![
                    "max_wall_secs = 18446744073709551615: from 1 to",
                    "model_call_secs = 0: from 1 to",
                    "model_call_tries = 0",
                ],
            ),
            (
                AgentSettings { provider: "antropic".into(), ..d() },
                vec!["provider = \"antropic\": \"auto\", \"openai\""],
            ),
            (AgentSettings { provider: "".into(), ..d() }, vec![]),
            (
                AgentSettings { base_url: "localhost:11434/v1".into(), ..d() },
                vec!["base_url = \"localhost:11434/v1\": empty, or"],
            ),
            (AgentSettings { compact_at: 0.0, ..d() }, vec!["compact_at = 0: a share of the window"]),
            (AgentSettings { compact_at: 1.5, ..d() }, vec!["compact_at = 1.5: a share"]),
            (AgentSettings { temperature: f64::NAN, ..d() }, vec!["temperature = NaN: a number"]),
            (AgentSettings { temperature: 0.0, compact_at: 1.0, ..d() }, vec![]),
            (
                AgentSettings {
                    prices: [(
                        "m".to_string(),
                        ModelPrice { input: -3.0, cached_input: None, cache_write: None, output: 15.0 },
                    )]
                    .into(),
                    ..d()
                },
                vec!["prices.m.input = -3: a price per million tokens"],
            ),
        ];
        for (settings, want) in cases {
            let got: Vec<String> = settings.validate().iter().map(ToString::to_string).collect();
            assert_eq!(got.len(), want.len(), "{got:?}");
            for (got, want) in got.iter().zip(&want) {
                assert!(got.starts_with(want), "{got} / {want}");
            }
        }
        let near = AgentSettings { provider: "antropic".into(), ..d() }.validate();
        assert!(near[0].allowed.ends_with("did you mean \"anthropic\"?"), "{near:?}");
    }

    #[test]
    fn unknown_provider_says_what_works() {
        let s = AgentSettings { provider: "gemini".into(), ..AgentSettings::default() };
        let err = resolve_provider(&s, |_| None, None, None).unwrap_err();
        assert_eq!(err, UnknownProvider("gemini".into()));
        assert!(err.to_string().contains("use \"auto\", \"openai\""), "{err}");
    }
}
