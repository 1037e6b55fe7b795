//! Asks a provider for its model list (`GET {base}/models`), for the model picker.

use crate::js::js_error_text;
use crate::models::{parse_model_list, ListedModel};
use crate::provider::ProviderSettings;
use ccm_browser::transport;
use ccm_provider::ProviderKind;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;
use web_sys::{Headers, Request, RequestInit, Response};

/// The provider's models, sorted by name.
///
/// # Errors
/// A sentence for the person: no list for the offline model, a bad URL, a network failure,
/// an HTTP error, or an answer that is not a model list.
pub async fn fetch_models(
    settings: &ProviderSettings,
    key: &str,
) -> Result<Vec<ListedModel>, String> {
    let config = settings
        .provider_config(Some(key))?
        .ok_or("the offline demo model has no model list")?;
    let url = format!("{}/models", config.base_url.trim_end_matches('/'));
    let headers = Headers::new().map_err(|e| js_error_text(&e))?;
    let set = |name: &str, value: &str| headers.append(name, value).map_err(|e| js_error_text(&e));
    if let Some(key) = &config.api_key {
        match config.kind {
            ProviderKind::Anthropic => {
                set("x-api-key", key)?;
                set("anthropic-version", "2023-06-01")?;
                // Anthropic refuses browser requests without this opt-in header.
                set("anthropic-dangerous-direct-browser-access", "true")?;
            }
            _ => set("authorization", &format!("Bearer {key}"))?,
        }
    }
    for (name, value) in &config.extra_headers {
        set(name, value)?;
    }
    let init = RequestInit::new();
    init.set_method("GET");
    init.set_headers(&headers);
    let request = Request::new_with_str_and_init(&url, &init).map_err(|e| js_error_text(&e))?;
    let window = web_sys::window().ok_or("no window")?;
    let response: Response = match JsFuture::from(window.fetch_with_request(&request)).await {
        Ok(response) => response.unchecked_into(),
        Err(_) => {
            let why = transport::why_unreached(&url).await;
            return Err(transport::unreached_sentence(&url, why));
        }
    };
    if !response.ok() {
        return Err(format!(
            "{url} answered HTTP {} (this provider may have no model list: type the model name instead)",
            response.status()
        ));
    }
    let body = JsFuture::from(response.text().map_err(|e| js_error_text(&e))?)
        .await
        .map_err(|e| js_error_text(&e))?
        .as_string()
        .unwrap_or_default();
    parse_model_list(&body)
}
