//! One model call of the loop: its time limit, retries with backoff, the
//! reply cache and the interrupt.

use std::time::Duration;

use super::{Agent, StopReason};
use crate::cache::ReplyCache;
use crate::events::Event;
use crate::message::{Message, Role};
use crate::provider::{ChatRequest, ChatResponse, ProviderError, RetryPolicy, ToolChoice, Usage};
use crate::tools::Tools;

/// Said in place of an image a model refused.
pub(super) const IMAGE_LEFT_OUT: &str =
    "[not shown: this model takes no images; what see printed above is what there is to read]";

impl<T: Tools> Agent<'_, T> {
    /// Sends the conversation (step `step`, recorded as a `request`),
    /// retrying what is worth retrying; a failure that stays (or the
    /// interrupt) becomes the run's stop reason.
    pub(super) async fn call_model(
        &mut self,
        step: u32,
        choice: ToolChoice,
        on_event: &mut dyn FnMut(&Event),
    ) -> Result<ChatResponse, StopReason> {
        self.record_request(step, choice, on_event);
        let policy = RetryPolicy {
            tries: self.settings.model_call_tries.max(1),
            base: Duration::from_millis(500),
            max_delay: Duration::from_secs(30),
        };
        let mut attempt = 1;
        let mut stream = true;
        loop {
            let error = match self.try_model(choice, stream).await? {
                Ok(reply) => return Ok(reply),
                Err(error) => error,
            };
            if self.leave_out_refused_images(attempt, &error, on_event) {
                // The same call without them, not counted as a try.
                continue;
            }
            // llama.cpp's streaming tool-call parser fails on replies its
            // unstreamed path returns whole (HTTP 500 "Invalid diff: now
            // finding less tool calls!", every try alike under greedy
            // decoding): after a server error the call's later tries go
            // unstreamed.
            if matches!(error, ProviderError::Http { status, .. } if status >= 500) {
                stream = false;
            }
            let wait = retry_wait(&policy, attempt, &error)?;
            self.emit(on_event, Event::Retry { attempt, wait_ms: wait.as_millis() as u64, error: error.to_string() });
            tokio::select! {
                () = tokio::time::sleep(wait) => {}
                () = self.interrupt.wait() => return Err(StopReason::Interrupted),
            }
            attempt += 1;
        }
    }

    /// One try: the reply cache, else the provider within the call's time
    /// limit (streamed when `stream` and the provider streams). Its text is
    /// not passed on here: the step shows it once it knows the reply is
    /// kept (`Agent::show_text`), and a try that fails mid-stream is not
    /// shown at all. `Err` only for the interrupt.
    async fn try_model(
        &mut self,
        choice: ToolChoice,
        stream: bool,
    ) -> Result<Result<ChatResponse, ProviderError>, StopReason> {
        let limit = self.settings.budgets().model_call;
        let request = ChatRequest {
            messages: &self.messages,
            tools: &self.tools,
            tool_choice: choice,
            max_output_tokens: self.settings.max_output_tokens,
        };
        let key = self.cache.as_ref().map(|_| {
            ReplyCache::key(self.provider.base_url(), &self.provider.model, self.provider.temperature(), &request)
        });
        if let (Some(cache), Some(key)) = (&self.cache, &key)
            && let Some(reply) = cache.get(key)
        {
            tracing::debug!(model = %self.provider.model, "reply cache hit: the model is not called");
            return Ok(Ok(reply));
        }
        let unstreamed;
        let provider = if stream {
            &self.provider
        } else {
            unstreamed = self.provider.unstreamed();
            &unstreamed
        };
        let mut unshown = |_: &str| {};
        let result = tokio::select! {
            r = tokio::time::timeout(limit, provider.complete(&request, &mut unshown)) => {
                r.unwrap_or_else(|_| Err(ProviderError::Timeout { limit, url: provider.base_url().to_string() }))
            }
            () = self.interrupt.wait() => return Err(StopReason::Interrupted),
        };
        if let (Ok(reply), Some(cache), Some(key)) = (&result, &self.cache, &key) {
            cache.put(key, reply);
        }
        Ok(result)
    }

    /// A model that takes no images refuses the whole conversation once a
    /// `see` result is in it (a text-only llama.cpp server answers HTTP 500
    /// "image input is not supported", every try alike, and the run ended
    /// there). When the refusal names images and the conversation has
    /// some, they leave it, each message saying so, and later `see`
    /// results go as text alone. `false` when there was nothing to leave out.
    fn leave_out_refused_images(
        &mut self,
        attempt: u32,
        error: &ProviderError,
        on_event: &mut dyn FnMut(&Event),
    ) -> bool {
        let about_images = matches!(error, ProviderError::Http { status, message, .. }
            if *status >= 400 && message.to_lowercase().contains("image"));
        if !about_images || self.messages.iter().all(|m| m.images.is_empty()) {
            return false;
        }
        for message in self.messages.iter_mut().filter(|m| !m.images.is_empty()) {
            message.images.clear();
            message.text.push(' ');
            message.text.push_str(IMAGE_LEFT_OUT);
        }
        self.images_refused = true;
        let message = format!("the model refused images ({error}); they are left out of the conversation");
        self.emit(on_event, Event::Retry { attempt, wait_ms: 0, error: message });
        true
    }
}

/// The wait before try `attempt + 1` after `error`, or the stop reason when
/// there is none: the error is not worth another try, or no try is left.
fn retry_wait(policy: &RetryPolicy, attempt: u32, error: &ProviderError) -> Result<Duration, StopReason> {
    if !error.is_retryable() || attempt >= policy.tries {
        let why = if error.is_retryable() { "no tries left (agent.model_call_tries)" } else { "not worth another try" };
        tracing::debug!(attempt, tries = policy.tries, reason = %error, why, "model call failed for good");
        return Err(StopReason::Error(error.to_string()));
    }
    let wait = policy.delay(attempt, error);
    let retry_after = match error {
        ProviderError::Http { retry_after: Some(after), .. } => Some(after.as_millis() as u64),
        _ => None,
    };
    tracing::debug!(
        attempt,
        tries = policy.tries,
        wait_ms = wait.as_millis() as u64,
        retry_after_ms = retry_after,
        backoff = if retry_after.is_some() {
            "the server's Retry-After (capped)"
        } else {
            "exponential, jittered between half and all of it"
        },
        reason = %error,
        "model call failed; retrying"
    );
    Ok(wait)
}

impl<T: Tools> Agent<'_, T> {
    /// A request beside the conversation (a summary of its log): no tool
    /// call, its own output cap, the model-call time limit, no retries.
    /// The reply's text, or why there is none.
    pub(super) async fn ask_aside(
        &self,
        system: &str,
        prompt: String,
        max_output_tokens: u32,
    ) -> Result<(String, Usage), String> {
        let messages = [Message::new(Role::System, system), Message::new(Role::User, prompt)];
        let request =
            ChatRequest { messages: &messages, tools: &self.tools, tool_choice: ToolChoice::None, max_output_tokens };
        let limit = self.settings.budgets().model_call;
        match tokio::time::timeout(limit, self.provider.complete(&request, &mut |_| {})).await {
            Ok(Ok(reply)) => Ok((reply.text, reply.usage)),
            Ok(Err(e)) => Err(e.to_string()),
            Err(_) => Err(format!("no reply within {}s", limit.as_secs())),
        }
    }
}
