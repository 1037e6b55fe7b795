//! Finding a model server on this computer: Ollama and LM Studio listen on well-known local
//! ports and speak the OpenAI-compatible protocol under `/v1`, without an API key. The app asks
//! each for its model list (`GET {address}/v1/models`) with a short time limit, and offers a
//! server that answers with models as the custom OpenAI-compatible endpoint. Nothing is
//! switched without the person's consent; the offer and its wording live in
//! `components::local_offer`.
//!
//! The addresses probed can be replaced through the localStorage entry
//! [`PROBE_ADDRESSES_KEY`], read for this purpose only: the end-to-end tests point it at a
//! server of their own, so they never depend on ports 11434 and 1234 being free (or taken).

use crate::models::parse_model_list;
use crate::provider::ProviderSettings;
use ccm_browser::provider::ProviderName;
use serde::Deserialize;

/// The localStorage entry that replaces the addresses probed: a JSON array such as
/// `[{"name": "Ollama", "url": "http://127.0.0.1:5000"}]`.
pub const PROBE_ADDRESSES_KEY: &str = "ccm.app.localServerProbes";

/// The localStorage entry that remembers "Not now", so the first-run offer is made once.
pub const NOT_NOW_KEY: &str = "ccm.app.localServerOfferDeclined";

/// How long a probe waits for an answer. A refused connection fails at once; the limit is for
/// an address that swallows packets, so the page never waits on it for long.
pub const PROBE_TIME_LIMIT_MS: u32 = 1_500;

/// A model server that may be running on this computer.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct LocalServer {
    /// What people call it ("Ollama").
    pub name: String,
    /// Its address without a path (`http://127.0.0.1:11434`).
    pub url: String,
}

impl LocalServer {
    fn new(name: &str, url: &str) -> LocalServer {
        LocalServer {
            name: name.to_string(),
            url: url.trim_end_matches('/').to_string(),
        }
    }

    /// The OpenAI-compatible base URL the app's custom endpoint is set to.
    pub fn base_url(&self) -> String {
        format!("{}/v1", self.url)
    }

    /// Where its model list is asked for.
    pub fn models_url(&self) -> String {
        format!("{}/models", self.base_url())
    }
}

/// The servers probed unless [`PROBE_ADDRESSES_KEY`] names others. They are asked at
/// 127.0.0.1 rather than `localhost`, which may resolve to ::1 first, where both servers do
/// not listen by default; one address each keeps the probe to one request per server.
pub fn well_known() -> Vec<LocalServer> {
    vec![
        LocalServer::new("Ollama", "http://127.0.0.1:11434"),
        LocalServer::new("LM Studio", "http://127.0.0.1:1234"),
    ]
}

/// The servers to probe: the well-known ones, or those the stored entry names.
///
/// # Errors
/// A sentence naming the entry and how to fix it when it is not such a list.
pub fn servers_to_probe(stored: Option<&str>) -> Result<Vec<LocalServer>, String> {
    let Some(json) = stored else {
        return Ok(well_known());
    };
    let problem = || {
        format!(
            "The localStorage entry {PROBE_ADDRESSES_KEY} must be a JSON array like \
             [{{\"name\": \"Ollama\", \"url\": \"http://127.0.0.1:11434\"}}]; remove it to \
             look at the usual addresses."
        )
    };
    let servers: Vec<LocalServer> = serde_json::from_str(json).map_err(|_| problem())?;
    if servers
        .iter()
        .any(|s| !(s.url.starts_with("http://") || s.url.starts_with("https://")))
    {
        return Err(problem());
    }
    Ok(servers
        .iter()
        .map(|s| LocalServer::new(&s.name, &s.url))
        .collect())
}

/// Whether a page served from `hostname` is on this computer. Only such a page probes by
/// itself: from a site on the internet the browser may ask the person for permission to reach
/// local devices, which must not pop up unasked on a first visit.
pub fn is_local_host(hostname: &str) -> bool {
    let host = hostname.trim_start_matches('[').trim_end_matches(']');
    host == "localhost"
        || host.ends_with(".localhost")
        || host == "::1"
        || host.split('.').next() == Some("127") && host.split('.').count() == 4
}

/// A model name as people say it: Ollama's default tag `:latest` left out.
pub fn spoken_model_name(id: &str) -> &str {
    id.strip_suffix(":latest").unwrap_or(id)
}

/// A server that answered with its models.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// The server.
    pub server: LocalServer,
    /// The model names it lists, sorted, none empty.
    pub models: Vec<String>,
}

impl Found {
    /// Reads the server's answer to the model list request.
    ///
    /// # Errors
    /// A sentence when the answer is not a model list or lists none.
    pub fn from_answer(server: LocalServer, body: &str) -> Result<Found, String> {
        let models: Vec<String> = parse_model_list(body)
            .map_err(|e| format!("{} answered at {}, but {e}.", server.name, server.url))?
            .into_iter()
            .map(|m| m.id)
            .filter(|id| !id.trim().is_empty())
            .collect();
        if models.is_empty() {
            return Err(format!(
                "{} is running at {}, but lists no models: download or load one in {} first.",
                server.name, server.url, server.name
            ));
        }
        Ok(Found { server, models })
    }

    /// The model offered first: the first one that can chat (embedding models cannot).
    pub fn suggested_model(&self) -> &str {
        self.models
            .iter()
            .find(|id| !id.to_lowercase().contains("embed"))
            .unwrap_or(&self.models[0])
    }

    /// The offer, in one plain question.
    pub fn offer_sentence(&self) -> String {
        let first = spoken_model_name(self.suggested_model());
        let others = match self.models.len() - 1 {
            0 => String::new(),
            1 => " and 1 other model".to_string(),
            n => format!(" and {n} other models"),
        };
        format!(
            "{} is running on this computer with {first}{others}. Use it?",
            self.server.name
        )
    }

    /// The settings that use `model` on this server: the custom OpenAI-compatible endpoint
    /// (no key), keeping what else the person set (streaming, the embeddings endpoint) and
    /// dropping prices entered for another model.
    pub fn settings(&self, current: &ProviderSettings, model: &str) -> ProviderSettings {
        ProviderSettings {
            choice: ProviderName::Compatible(ccm_browser::provider::ProviderKind::OpenAiCompatible),
            base_url: self.server.base_url(),
            model: model.to_string(),
            input_price: None,
            output_price: None,
            remember_key: false,
            ..current.clone()
        }
    }

    /// What is said once the person said yes.
    pub fn used_sentence(&self, model: &str) -> String {
        format!(
            "Replies now come from {} on this computer ({}, {}). Settings can change it.",
            self.server.name,
            spoken_model_name(model),
            self.server.base_url()
        )
    }
}

/// What a server's probe found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Probe {
    /// It answered with models.
    Found(Found),
    /// It answered, but the browser kept the answer from this page (CORS).
    Blocked(LocalServer),
    /// It answered with something that is not a usable model list (the sentence says what).
    Unusable(String),
    /// Nothing answered in time.
    NoAnswer,
}

/// What to change on `server` so that a page at `origin` may talk to it.
pub fn cors_advice(server: &LocalServer, origin: &str) -> String {
    match server.name.as_str() {
        "Ollama" => format!(
            "Ollama lets pages on localhost and 127.0.0.1 in by default; for {origin}, start it \
             with the environment variable OLLAMA_ORIGINS={origin}."
        ),
        "LM Studio" => {
            "In LM Studio, turn on “Enable CORS” in the local server's settings.".to_string()
        }
        _ => format!("The server must allow requests from {origin} (CORS)."),
    }
}

/// The sentence for a server that answered but is closed to this page.
pub fn blocked_sentence(server: &LocalServer, origin: &str) -> String {
    format!(
        "{} seems to be running on this computer ({}), but it does not let this page read its \
         answers. {}",
        server.name,
        server.url,
        cors_advice(server, origin)
    )
}

/// What is said when no server answered, with what a running one may need.
pub fn nothing_found_sentence(servers: &[LocalServer], page_is_local: bool) -> String {
    let looked = servers
        .iter()
        .map(|s| format!("{} at {}", s.name, s.url))
        .collect::<Vec<_>>()
        .join(", ");
    let remote = if page_is_local {
        ""
    } else {
        " This page is not served from this computer: browsers may keep a site on the internet \
         from reaching http://localhost or ask your permission first, so open the app from \
         this computer if the server is running."
    };
    format!(
        "No model server answered on this computer (looked for {looked}). If one is running: \
         LM Studio needs “Enable CORS” in its server settings, and Ollama needs OLLAMA_ORIGINS \
         for pages that are not on localhost.{remote}"
    )
}

/// Asks every server for its models at the same time, each with [`PROBE_TIME_LIMIT_MS`].
pub async fn probe_all(servers: &[LocalServer]) -> Vec<Probe> {
    use wasm_bindgen::JsCast;
    use wasm_bindgen_futures::JsFuture;
    let Some(window) = web_sys::window() else {
        return servers.iter().map(|_| Probe::NoAnswer).collect();
    };
    // Every request starts before the first answer is awaited, so the probes run together.
    let pending: Vec<_> = servers
        .iter()
        .map(|server| {
            let init = web_sys::RequestInit::new();
            init.set_method("GET");
            init.set_signal(Some(&web_sys::AbortSignal::timeout_with_u32(
                PROBE_TIME_LIMIT_MS,
            )));
            JsFuture::from(window.fetch_with_str_and_init(&server.models_url(), &init))
        })
        .collect();
    let mut probes = Vec::with_capacity(servers.len());
    for (server, answer) in servers.iter().zip(pending) {
        let probe = match answer.await {
            Ok(response) => {
                let response: web_sys::Response = response.unchecked_into();
                read_answer(server, response).await
            }
            Err(error) => {
                let timed_out = error
                    .dyn_ref::<js_sys::Error>()
                    .is_some_and(|e| e.name() == "TimeoutError");
                let url = server.models_url();
                if timed_out {
                    Probe::NoAnswer
                } else if ccm_browser::transport::why_unreached(&url).await
                    == ccm_browser::transport::Unreached::Blocked
                {
                    Probe::Blocked(server.clone())
                } else {
                    Probe::NoAnswer
                }
            }
        };
        probes.push(probe);
    }
    probes
}

/// Reads an answer that arrived: a model list, or what is wrong with it.
async fn read_answer(server: &LocalServer, response: web_sys::Response) -> Probe {
    if !response.ok() {
        return Probe::Unusable(format!(
            "Something answered at {} with HTTP {}, not a model list: it may not be {}.",
            server.url,
            response.status(),
            server.name
        ));
    }
    let body = match response.text() {
        Ok(promise) => wasm_bindgen_futures::JsFuture::from(promise).await,
        Err(error) => Err(error),
    };
    match body.ok().and_then(|b| b.as_string()) {
        Some(body) => match Found::from_answer(server.clone(), &body) {
            Ok(found) => Probe::Found(found),
            Err(sentence) => Probe::Unusable(sentence),
        },
        None => Probe::Unusable(format!(
            "{} at {} stopped answering halfway.",
            server.name, server.url
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ollama() -> LocalServer {
        well_known().remove(0)
    }

    #[test]
    fn the_well_known_servers_are_asked_for_their_models_under_v1() {
        let urls: Vec<String> = well_known().iter().map(LocalServer::models_url).collect();
        assert_eq!(
            urls,
            [
                "http://127.0.0.1:11434/v1/models",
                "http://127.0.0.1:1234/v1/models"
            ]
        );
    }

    #[test]
    fn the_stored_addresses_replace_the_usual_ones_or_say_what_is_wrong() {
        assert_eq!(servers_to_probe(None).unwrap(), well_known());
        let stored = r#"[{"name": "Ollama", "url": "http://127.0.0.1:5000/"}]"#;
        let servers = servers_to_probe(Some(stored)).unwrap();
        assert_eq!(servers[0].base_url(), "http://127.0.0.1:5000/v1");
        for bad in ["nonsense", r#"[{"name": "x", "url": "127.0.0.1:5000"}]"#] {
            let error = servers_to_probe(Some(bad)).unwrap_err();
            assert!(error.contains(PROBE_ADDRESSES_KEY), "{error}");
            assert!(error.contains("remove it"), "{error}");
        }
    }

    #[test]
    fn only_a_page_on_this_computer_probes_by_itself() {
        for local in [
            "localhost",
            "127.0.0.1",
            "127.0.1.1",
            "[::1]",
            "app.localhost",
        ] {
            assert!(is_local_host(local), "{local}");
        }
        for remote in [
            "example.org",
            "127.example.org",
            "192.168.1.2",
            "localhost.evil.com",
        ] {
            assert!(!is_local_host(remote), "{remote}");
        }
    }

    #[test]
    fn the_offer_names_the_server_its_first_chat_model_and_how_many_others() {
        let body = r#"{"object":"list","data":[{"id":"nomic-embed-text:latest"},
            {"id":"qwen2.5:7b"},{"id":"llama3.2:latest"}]}"#;
        let found = Found::from_answer(ollama(), body).unwrap();
        assert_eq!(found.suggested_model(), "llama3.2:latest");
        assert_eq!(
            found.offer_sentence(),
            "Ollama is running on this computer with llama3.2 and 2 other models. Use it?"
        );
        let one = Found::from_answer(ollama(), r#"{"data":[{"id":"phi3"}]}"#).unwrap();
        assert_eq!(
            one.offer_sentence(),
            "Ollama is running on this computer with phi3. Use it?"
        );
        let two = Found::from_answer(ollama(), r#"{"data":[{"id":"a"},{"id":"b"}]}"#).unwrap();
        assert!(two
            .offer_sentence()
            .ends_with("with a and 1 other model. Use it?"));
    }

    #[test]
    fn a_server_without_models_or_without_a_list_is_no_offer() {
        let none = Found::from_answer(ollama(), r#"{"data":[]}"#).unwrap_err();
        assert!(none.contains("lists no models"), "{none}");
        let html = Found::from_answer(ollama(), "<html>").unwrap_err();
        assert!(html.contains("not JSON"), "{html}");
    }

    #[test]
    fn using_a_server_sets_the_custom_endpoint_without_a_key_and_keeps_the_rest() {
        let found = Found::from_answer(ollama(), r#"{"data":[{"id":"llama3.2:latest"}]}"#).unwrap();
        let current = ProviderSettings {
            stream: false,
            embeddings_url: "http://127.0.0.1:11434/v1".into(),
            input_price: Some(3.0),
            ..ProviderSettings::default()
        };
        let settings = found.settings(&current, "llama3.2:latest");
        assert_eq!(
            settings.choice,
            ProviderName::Compatible(ccm_browser::provider::ProviderKind::OpenAiCompatible)
        );
        assert_eq!(settings.model, "llama3.2:latest");
        assert!(!settings.stream && settings.embeddings_url == current.embeddings_url);
        assert_eq!(settings.input_price, None);
        let config = settings.provider_config(None).unwrap().unwrap();
        assert_eq!(
            config.endpoint_url(),
            "http://127.0.0.1:11434/v1/chat/completions"
        );
        assert_eq!(config.api_key, None);
        assert_eq!(
            found.used_sentence("llama3.2:latest"),
            "Replies now come from Ollama on this computer (llama3.2, http://127.0.0.1:11434/v1). \
             Settings can change it."
        );
    }

    #[test]
    fn the_hints_say_what_each_server_needs_for_this_page() {
        let lm_studio = well_known().remove(1);
        let origin = "https://ccm.example.org";
        assert!(blocked_sentence(&lm_studio, origin).contains("Enable CORS"));
        assert!(
            blocked_sentence(&ollama(), origin).contains("OLLAMA_ORIGINS=https://ccm.example.org")
        );
        let local = nothing_found_sentence(&well_known(), true);
        assert!(
            local.contains("Ollama at http://127.0.0.1:11434, LM Studio at http://127.0.0.1:1234")
        );
        assert!(!local.contains("not served from this computer"));
        assert!(nothing_found_sentence(&well_known(), false).contains("ask your permission"));
    }
}
