// A minimal OpenAI-compatible chat-completions server for `make smoke-real`.
//
// Serves one GGUF model with node-llama-cpp (prebuilt CPU binary) on 127.0.0.1 only:
//   GET  /v1/models             -> {"object": "list", "data": [{"id": MODEL, ...}]}
//   POST /v1/chat/completions   -> one chat.completion (no streaming), plain text only: the
//                                  request's `tools` are ignored, `tool` messages reach the model
//                                  as user text. `usage` counts prompt and completion tokens.
//   GET  /stats                 -> {"requests": N} (chat completions served since start)
// Requests are answered one at a time, each side (system prompt) in its own context sequence. The prompt is fitted into the
// context: the oldest non-system messages go first, then the system text is cut from its end.
//
// Usage: node server.mjs MODEL.gguf MODEL_ID PORT_FILE
// Environment: SMOKE_CTX (context tokens, default 2048), SMOKE_THREADS (default 1),
// SMOKE_MAX_TOKENS (cap on max_tokens, default 64).
// Writes the chosen port to PORT_FILE once it listens; exits on SIGTERM.
import http from "node:http";
import fs from "node:fs";
import {getLlama, LlamaChat} from "node-llama-cpp";

const [modelPath, modelId, portFile] = process.argv.slice(2);
if (!modelPath || !modelId || !portFile) {
    console.error("usage: node server.mjs MODEL.gguf MODEL_ID PORT_FILE");
    process.exit(2);
}
const contextSize = Number(process.env.SMOKE_CTX || 2048);
const threads = Number(process.env.SMOKE_THREADS || 1);
const maxTokensCap = Number(process.env.SMOKE_MAX_TOKENS || 64);

const llama = await getLlama({gpu: false, build: "never"});
const model = await llama.loadModel({modelPath});
// Two sequences, one per system prompt seen last (the agent's and the caller's), so that each
// side's next request evaluates only its new turns: the shared prefix stays in the KV cache.
const context = await model.createContext({contextSize, threads, sequences: 2});
const slots = [0, 1].map(() => ({key: null, used: 0, chat: new LlamaChat({contextSequence: context.getSequence()})}));
let clock = 0;

function slotFor(key) {
    let slot = slots.find((s) => s.key === key);
    if (!slot) {
        slot = slots.reduce((a, b) => (a.used <= b.used ? a : b));
        slot.key = key;
    }
    slot.used = ++clock;
    return slot;
}
let served = 0;
let queue = Promise.resolve();

function text(content) {
    if (typeof content === "string") return content;
    if (Array.isArray(content)) return content.map((part) => part.text ?? "").join("");
    return content == null ? "" : String(content);
}

function toHistory(messages) {
    const history = [];
    for (const m of messages) {
        const body = text(m.content);
        if (m.role === "system" || m.role === "developer") history.push({type: "system", text: body});
        else if (m.role === "assistant") {
            const calls = (m.tool_calls || []).map((c) => `[called ${c.function?.name}]`).join(" ");
            history.push({type: "model", response: [[body, calls].filter(Boolean).join(" ")]});
        } else if (m.role === "tool") history.push({type: "user", text: `Tool result: ${body}`});
        else history.push({type: "user", text: body});
    }
    if (history.length === 0 || history[history.length - 1].type !== "user") {
        history.push({type: "user", text: "(silence)"});
    }
    return history;
}

function tokens(item) {
    const body = item.type === "model" ? item.response.join("") : item.text;
    return model.tokenize(body).length + 8;
}

// Fit the history into the context, leaving room for the reply.
function fit(history, room) {
    const budget = contextSize - room - 32;
    const system = history.filter((h) => h.type === "system");
    let rest = history.filter((h) => h.type !== "system");
    const restTokens = () => rest.reduce((n, h) => n + tokens(h), 0);
    while (rest.length > 1 && restTokens() > budget / 2) rest = rest.slice(1);
    let left = budget - restTokens();
    const kept = [];
    for (const s of system) {
        const ids = model.tokenize(s.text);
        const take = Math.max(0, Math.min(ids.length, left - 8));
        if (take > 0) kept.push({type: "system", text: model.detokenize(ids.slice(0, take))});
        left -= take + 8;
    }
    return [...kept, ...rest];
}

async function complete(body) {
    const started = Date.now();
    const maxTokens = Math.min(Number(body.max_tokens || body.max_completion_tokens || maxTokensCap), maxTokensCap);
    const history = fit(toHistory(body.messages || []), maxTokens);
    const promptTokens = history.reduce((n, h) => n + tokens(h), 0);
    const key = history.filter((h) => h.type === "system").map((h) => h.text.slice(0, 200)).join("|");
    const result = await slotFor(key).chat.generateResponse(history, {
        maxTokens,
        temperature: body.temperature ?? 0,
        seed: body.seed ?? 0,
        contextShift: {strategy: "eraseFirstResponseAndKeepFirstSystem"},
    });
    const content = result.response.trim();
    console.error(`request ${served + 1}: ${promptTokens} prompt tokens, ${Date.now() - started} ms`);
    const completionTokens = model.tokenize(result.response).length;
    served += 1;
    return {
        id: `chatcmpl-smoke-${served}`,
        object: "chat.completion",
        created: Math.floor(Date.now() / 1000),
        model: modelId,
        choices: [{
            index: 0,
            message: {role: "assistant", content: content || "Okay."},
            finish_reason: result.metadata?.stopReason === "maxTokens" ? "length" : "stop",
        }],
        usage: {prompt_tokens: promptTokens, completion_tokens: completionTokens, total_tokens: promptTokens + completionTokens},
    };
}

function send(res, status, payload) {
    const data = JSON.stringify(payload);
    res.writeHead(status, {"content-type": "application/json", "content-length": Buffer.byteLength(data)});
    res.end(data);
}

const server = http.createServer((req, res) => {
    const url = (req.url || "").split("?")[0];
    if (req.method === "GET" && url === "/v1/models") {
        return send(res, 200, {object: "list", data: [{id: modelId, object: "model", owned_by: "local"}]});
    }
    if (req.method === "GET" && url === "/stats") return send(res, 200, {requests: served});
    if (req.method !== "POST" || url !== "/v1/chat/completions") {
        return send(res, 404, {error: {message: `no route ${req.method} ${url}`, type: "not_found"}});
    }
    let raw = "";
    req.on("data", (chunk) => { raw += chunk; });
    req.on("end", () => {
        let body;
        try { body = JSON.parse(raw); } catch {
            return send(res, 400, {error: {message: "request body is not JSON", type: "invalid_request_error"}});
        }
        // A request whose client gave up (timed out) while queued is not run.
        queue = queue.then(() => (req.socket.destroyed ? null : complete(body))).then(
            (reply) => reply && !req.socket.destroyed && send(res, 200, reply),
            (err) => send(res, 500, {error: {message: String(err?.message || err), type: "server_error"}}),
        );
    });
});

server.listen(0, "127.0.0.1", () => {
    fs.writeFileSync(portFile, String(server.address().port));
    console.error(`smoke server: ${modelId} on 127.0.0.1:${server.address().port} (ctx ${contextSize}, threads ${threads})`);
});
process.on("SIGTERM", () => { server.close(); process.exit(0); });
