//! The HTTP routes: the storage contract of [`ccm_store::remote`] for the authenticated
//! account, health and readiness, and the layers around them (request log, CORS, body limit,
//! authentication and the per-account rate limit).

use crate::auth::{Account, Accounts};
use crate::error::{ApiError, ErrorCode};
use crate::scope::{check_session_id, AccountStore};
use axum::body::Bytes;
use axum::extract::rejection::BytesRejection;
use axum::extract::{
    DefaultBodyLimit, FromRequestParts, MatchedPath, Path, Query, RawPathParams, Request, State,
};
use axum::http::request::Parts;
use axum::http::{header, HeaderValue, Method, StatusCode};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Extension, Json, Router};
use ccm_core::Session;
use ccm_store::postgres::PostgresStore;
use ccm_store::remote::{
    ImportRequest, ListResponse, LoadResponse, LogResponse, MessagesResponse, RecordsResponse,
    RenameRequest, SeqsRequest, WriteRequest,
};
use ccm_store::{sessions, MessagesRead, RecordStore, StoreError};
use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use serde::de::DeserializeOwned;
use serde::Deserialize;
use std::num::NonZeroU32;
use std::sync::Arc;
use std::time::Instant;
use tower_http::cors::{AllowOrigin, CorsLayer};

/// The most messages one range read may span: the app's recall rebuild reads steps of 2,000.
pub const MAX_RANGE: u64 = 20_000;
/// The most sequence numbers one read by number may name.
pub const MAX_SEQS: usize = 10_000;
/// The longest session name.
pub const MAX_NAME: usize = 500;

/// How the server serves: limits and origins.
#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    /// The largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// Requests per second each account may make on average, per server process.
    pub requests_per_second: u32,
    /// Requests an account may make at once above that rate.
    pub burst: u32,
    /// Origins whose pages may call the server from a browser (CORS); none means no
    /// cross-origin browser access at all.
    pub allowed_origins: Vec<String>,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            // A session document import of a long conversation fits; a save is ~15 KB.
            max_body_bytes: 32 * 1024 * 1024,
            requests_per_second: 50,
            burst: 200,
            allowed_origins: Vec::new(),
        }
    }
}

/// What every request shares: the store, the accounts and the rate limiter. Nothing about a
/// session is kept here between requests, so any number of processes can serve one database.
pub struct AppState {
    store: PostgresStore,
    accounts: Accounts,
    limiter: DefaultKeyedRateLimiter<String>,
    limits: Limits,
}

impl AppState {
    /// The state of a server over `store` and `accounts`.
    ///
    /// # Errors
    /// `bad_request` for a rate or burst of zero.
    pub fn new(
        store: PostgresStore,
        accounts: Accounts,
        limits: Limits,
    ) -> Result<AppState, ApiError> {
        let rate = NonZeroU32::new(limits.requests_per_second).ok_or_else(|| {
            ApiError::bad_request("the request rate per account must be at least 1")
        })?;
        let burst = NonZeroU32::new(limits.burst)
            .ok_or_else(|| ApiError::bad_request("the burst per account must be at least 1"))?;
        Ok(AppState {
            store,
            accounts,
            limiter: RateLimiter::keyed(Quota::per_second(rate).allow_burst(burst)),
            limits,
        })
    }

    /// The accounts.
    pub fn accounts(&self) -> &Accounts {
        &self.accounts
    }

    /// Forgets the rate-limit state of accounts that have been idle, so that the limiter's
    /// memory follows the accounts in use, not every account ever seen.
    pub fn forget_idle_accounts(&self) {
        self.limiter.retain_recent();
    }
}

type Shared = Arc<AppState>;

/// The whole router with its layers.
pub fn router(state: Shared) -> Router {
    let api = Router::new()
        .route("/v1/sessions", get(list))
        .route(
            "/v1/sessions/{id}",
            get(load).put(write).patch(rename).delete(delete),
        )
        .route("/v1/sessions/{id}/efforts/{effort}/log", get(effort_log))
        .route("/v1/sessions/{id}/messages", get(messages_between))
        .route("/v1/sessions/{id}/messages/by-seq", post(messages_by_seq))
        .route("/v1/sessions/{id}/records", get(records))
        .route("/v1/sessions/{id}/telemetry/{turn}", get(telemetry))
        .route("/v1/sessions/{id}/export", get(export))
        .route("/v1/sessions/{id}/import", post(import))
        .route_layer(middleware::from_fn_with_state(state.clone(), authenticate));
    Router::new()
        .route("/healthz", get(health))
        .route("/readyz", get(ready))
        .merge(api)
        .fallback(not_a_route)
        .layer(DefaultBodyLimit::max(state.limits.max_body_bytes))
        .layer(cors(&state.limits.allowed_origins))
        .layer(middleware::from_fn(log_request))
        .with_state(state)
}

/// CORS for the configured origins only: the methods and headers the wire format uses.
fn cors(origins: &[String]) -> CorsLayer {
    let origins: Vec<HeaderValue> = origins
        .iter()
        .filter_map(|origin| HeaderValue::from_str(origin.trim_end_matches('/')).ok())
        .collect();
    CorsLayer::new()
        .allow_origin(AllowOrigin::list(origins))
        .allow_methods([
            Method::GET,
            Method::PUT,
            Method::POST,
            Method::PATCH,
            Method::DELETE,
        ])
        .allow_headers([header::AUTHORIZATION, header::CONTENT_TYPE])
        .expose_headers([header::RETRY_AFTER])
        .max_age(std::time::Duration::from_secs(3600))
}

/// One log line per request: method, route (its pattern, so no ids), status, account, token
/// id, error code and duration. Never a body, a header or a query.
async fn log_request(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "(none)".to_string(), |p| p.as_str().to_string());
    let response = next.run(request).await;
    let account = response.extensions().get::<Account>().cloned();
    let code = response.extensions().get::<ErrorCode>().map(|c| c.0);
    tracing::info!(
        target: "ccm_server::request",
        method = %method,
        route = %route,
        status = response.status().as_u16(),
        account = account.as_ref().map(|a| a.id.as_str()),
        token = account.as_ref().map(|a| a.token_id.as_str()),
        code,
        ms = started.elapsed().as_secs_f64() * 1000.0,
    );
    response
}

/// Authenticates the bearer token and applies the account's rate limit; the account goes into
/// the request for the handlers and into the response for the log.
async fn authenticate(State(state): State<Shared>, mut request: Request, next: Next) -> Response {
    let token = request
        .headers()
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(str::trim)
        .map(str::to_string);
    let Some(token) = token else {
        return ApiError::unauthorized(
            "this request has no bearer token: send 'Authorization: Bearer <token>' (create a token with `ccm-server token create`)",
        )
        .into_response();
    };
    let account = match state.accounts.authenticate(&token).await {
        Ok(account) => account,
        Err(error) => return error.into_response(),
    };
    if let Err(not_until) = state.limiter.check_key(&account.id) {
        let wait = not_until.wait_time_from(DefaultClock::default().now());
        let mut response = ApiError::rate_limited(wait.as_secs() + 1).into_response();
        response.extensions_mut().insert(account);
        return response;
    }
    request.extensions_mut().insert(account.clone());
    let mut response = next.run(request).await;
    response.extensions_mut().insert(account);
    response
}

async fn health() -> Json<serde_json::Value> {
    Json(serde_json::json!({ "status": "ok" }))
}

async fn ready(State(state): State<Shared>) -> Result<Json<serde_json::Value>, ApiError> {
    state.accounts.ping().await?;
    Ok(Json(serde_json::json!({ "status": "ready" })))
}

async fn not_a_route() -> ApiError {
    ApiError::not_found("there is no such route on this server; the API lives under /v1")
}

/// What every route of one session starts from: the authenticated account's store and the
/// session id from the path, checked before anything is read or parsed. Handlers take it
/// after their other path extractors, so a malformed path is refused as before.
struct SessionScope {
    state: Shared,
    account: String,
    id: String,
}

impl SessionScope {
    /// The account's store and the session's id.
    fn parts(&self) -> (AccountStore<'_>, &str) {
        (
            AccountStore::new(&self.state.store, &self.account),
            &self.id,
        )
    }

    /// The request's JSON body, within the server's body limit.
    fn body<T: DeserializeOwned>(
        &self,
        bytes: Result<Bytes, BytesRejection>,
    ) -> Result<T, ApiError> {
        body(bytes, self.state.limits.max_body_bytes)
    }
}

impl FromRequestParts<Shared> for SessionScope {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &Shared) -> Result<Self, ApiError> {
        // The account is set by `authenticate`, which guards every session route.
        let account = parts
            .extensions
            .get::<Account>()
            .map(|account| account.id.clone())
            .ok_or_else(|| ApiError::unauthorized("this request was not authenticated"))?;
        let params = RawPathParams::from_request_parts(parts, state)
            .await
            .map_err(|e| ApiError::bad_request(e.body_text()))?;
        let id = params
            .iter()
            .find_map(|(name, value)| (name == "id").then(|| value.to_string()))
            .ok_or_else(|| ApiError::bad_request("this route names no session"))?;
        check_session_id(&id).map_err(ApiError::bad_request)?;
        Ok(SessionScope {
            state: state.clone(),
            account,
            id,
        })
    }
}

/// A JSON body of type `T`, or a precise refusal.
fn body<T: DeserializeOwned>(
    bytes: Result<Bytes, BytesRejection>,
    limit: usize,
) -> Result<T, ApiError> {
    let bytes = bytes.map_err(|rejection| {
        if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
            ApiError::too_large(format!(
                "the request body is larger than this server accepts ({limit} bytes); nothing was changed"
            ))
        } else {
            ApiError::bad_request(format!("the request body could not be read: {rejection}"))
        }
    })?;
    serde_json::from_slice(&bytes).map_err(|e| {
        ApiError::bad_request(format!(
            "the request body is not what this route takes ({e}); nothing was changed"
        ))
    })
}

async fn list(
    State(state): State<Shared>,
    Extension(account): Extension<Account>,
) -> Result<Json<ListResponse>, ApiError> {
    let store = AccountStore::new(&state.store, &account.id);
    let (sessions, damaged) = store.rows().await?;
    Ok(Json(ListResponse {
        sessions,
        damaged: damaged
            .into_iter()
            .map(|d| ccm_store::remote::DamagedRow {
                id: d.id,
                problem: d.problem,
            })
            .collect(),
    }))
}

async fn write(
    session: SessionScope,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Json<ccm_store::SessionRow>, ApiError> {
    let (store, id) = session.parts();
    let request: WriteRequest = session.body(bytes)?;
    if let Some(name) = &request.name {
        check_name(name)?;
    }
    match store.write(id, &request.batch, request.write_mode()).await {
        Ok(row) => Ok(Json(row)),
        Err(error @ StoreError::Conflict(_)) => {
            // The revision that won, so that the client can tell "pull" from "conflict"
            // without another request. Read after the refusal; a later save may have moved it
            // on again, which the client's next attempt finds the same way.
            let stored = store.revision(id).await.ok().flatten();
            Err(ApiError::store(error, stored))
        }
        Err(error) => Err(error.into()),
    }
}

fn check_name(name: &str) -> Result<(), ApiError> {
    if name.chars().count() > MAX_NAME {
        return Err(ApiError::bad_request(format!(
            "a session name may have at most {MAX_NAME} characters"
        )));
    }
    Ok(())
}

async fn load(session: SessionScope) -> Result<Json<LoadResponse>, ApiError> {
    let (store, id) = session.parts();
    let (row, records) = store.load(id).await?;
    Ok(Json(LoadResponse::of(row, records)))
}

async fn effort_log(
    Path((_, effort)): Path<(String, String)>,
    session: SessionScope,
) -> Result<Json<LogResponse>, ApiError> {
    let (store, id) = session.parts();
    let (messages, unreadable) = store.effort_log(id, &effort).await?;
    Ok(Json(LogResponse {
        messages,
        unreadable,
    }))
}

#[derive(Deserialize)]
struct Range {
    from: u64,
    to: u64,
}

/// A read of stored messages as the wire format answers it: the messages, and the records
/// that could not be read.
fn messages_read((messages, unreadable): MessagesRead) -> Json<MessagesResponse> {
    Json(MessagesResponse {
        messages,
        unreadable,
    })
}

async fn messages_between(
    session: SessionScope,
    range: Result<Query<Range>, axum::extract::rejection::QueryRejection>,
) -> Result<Json<MessagesResponse>, ApiError> {
    let (store, id) = session.parts();
    let Query(range) = range.map_err(|e| {
        ApiError::bad_request(format!(
            "a range read takes ?from=N&to=M with whole numbers ({e})"
        ))
    })?;
    if range.to.saturating_sub(range.from) > MAX_RANGE {
        return Err(ApiError::bad_request(format!(
            "a range read may span at most {MAX_RANGE} messages; read in steps"
        )));
    }
    Ok(messages_read(
        store.messages_between(id, range.from, range.to).await?,
    ))
}

async fn messages_by_seq(
    session: SessionScope,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Json<MessagesResponse>, ApiError> {
    let (store, id) = session.parts();
    let request: SeqsRequest = session.body(bytes)?;
    if request.seqs.len() > MAX_SEQS {
        return Err(ApiError::bad_request(format!(
            "a read by number may name at most {MAX_SEQS} messages; read in steps"
        )));
    }
    Ok(messages_read(
        store.messages_by_seq(id, &request.seqs).await?,
    ))
}

async fn records(session: SessionScope) -> Result<Json<RecordsResponse>, ApiError> {
    let (store, id) = session.parts();
    Ok(Json(RecordsResponse::of(store.read_all(id).await?)))
}

async fn telemetry(
    Path((_, turn)): Path<(String, u64)>,
    session: SessionScope,
) -> Result<Json<Option<ccm_core::telemetry::TurnTelemetry>>, ApiError> {
    let (store, id) = session.parts();
    Ok(Json(store.telemetry(id, turn).await?))
}

async fn rename(
    session: SessionScope,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<StatusCode, ApiError> {
    let (store, id) = session.parts();
    let request: RenameRequest = session.body(bytes)?;
    check_name(&request.name)?;
    store.rename(id, &request.name, request.now_ms).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn delete(session: SessionScope) -> Result<StatusCode, ApiError> {
    let (store, id) = session.parts();
    store.delete(id).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn export(session: SessionScope) -> Result<Response, ApiError> {
    let (store, id) = session.parts();
    let document = sessions::export_document::<_, ApiError>(&store, id, |_| None).await?;
    let text = serde_json::to_string(&document)
        .map_err(|e| ApiError::internal(format!("the export could not be written: {e}")))?;
    Ok(([(header::CONTENT_TYPE, "application/json")], text).into_response())
}

async fn import(
    session: SessionScope,
    bytes: Result<Bytes, BytesRejection>,
) -> Result<Json<ccm_store::SessionRow>, ApiError> {
    let (store, id) = session.parts();
    let request: ImportRequest = session.body(bytes)?;
    check_name(&request.name)?;
    // Counting is CPU work of the size of the document: off the threads that serve requests.
    let document = request.document;
    let mut session = tokio::task::spawn_blocking(move || Session::from_json(&document))
        .await
        .map_err(|e| ApiError::internal(format!("the import stopped: {e}")))??;
    let row = sessions::insert::<_, ApiError>(
        &store,
        id,
        &mut session,
        &request.name,
        request.now_ms,
        false,
    )
    .await?;
    Ok(Json(row))
}
