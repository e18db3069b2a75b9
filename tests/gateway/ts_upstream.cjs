// An upstream for the gateway's tests written on the TypeScript SDK (@modelcontextprotocol/sdk
// 1.32, installed by .ci/upstreams.sh; found through NODE_PATH), with a tool that asks with
// `server.elicitInput`.
//
// Run as `node ts_upstream.cjs stdio` or `node ts_upstream.cjs http PORT` (Streamable HTTP,
// one transport per MCP session). With GATEWAY_TEST_MARKS naming a directory, every answer the
// tool received is appended to answers.jsonl there.
"use strict";

const fs = require("node:fs");
const http = require("node:http");
const path = require("node:path");
const { randomUUID } = require("node:crypto");
const { McpServer } = require("@modelcontextprotocol/sdk/server/mcp.js");
const { StdioServerTransport } = require("@modelcontextprotocol/sdk/server/stdio.js");
const {
    StreamableHTTPServerTransport,
} = require("@modelcontextprotocol/sdk/server/streamableHttp.js");

const MARKS = process.env.GATEWAY_TEST_MARKS;

function record(answer) {
    if (MARKS) fs.appendFileSync(path.join(MARKS, "answers.jsonl"), JSON.stringify(answer) + "\n");
}

const PERSON = {
    type: "object",
    properties: {
        name: { type: "string", title: "Name", description: "Your name" },
        age: { type: "integer", title: "Age", minimum: 0, maximum: 150 },
    },
    required: ["name", "age"],
};

function build() {
    const server = new McpServer(
        { name: "ts-upstream", version: "1.0.0" },
        { instructions: "A TypeScript server behind the gateway." },
    );
    server.registerTool("ask_person", { description: "Ask who the user is." }, async () => {
        const result = await server.server.elicitInput(
            { mode: "form", message: "Who are you?", requestedSchema: PERSON },
            { timeout: 120000 },
        );
        let text = result.action;
        if (result.action === "accept") {
            record({ action: "accept", data: result.content });
            text = `accept: ${result.content.name} (${result.content.age})`;
        } else {
            record({ action: result.action });
        }
        return { content: [{ type: "text", text }] };
    });
    return server;
}

async function serveHttp(port) {
    const sessions = new Map();
    const httpServer = http.createServer(async (req, res) => {
        const chunks = [];
        for await (const chunk of req) chunks.push(chunk);
        const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString()) : undefined;
        const id = req.headers["mcp-session-id"];
        let transport = id ? sessions.get(id) : undefined;
        if (!transport) {
            if (id || req.method !== "POST") {
                res.writeHead(404).end();
                return;
            }
            transport = new StreamableHTTPServerTransport({
                sessionIdGenerator: () => randomUUID(),
                onsessioninitialized: (sid) => sessions.set(sid, transport),
            });
            transport.onclose = () => transport.sessionId && sessions.delete(transport.sessionId);
            await build().connect(transport);
        }
        await transport.handleRequest(req, res, body);
    });
    httpServer.listen(port, "127.0.0.1");
}

if (process.argv[2] === "stdio") {
    build().connect(new StdioServerTransport());
} else {
    serveHttp(Number(process.argv[3]));
}
