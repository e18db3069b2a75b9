"""Every text erlmcp-py shows to people, in en-US and pt-BR, from one catalog.

:data:`CATALOG` maps a key to its text per locale; texts are :meth:`str.format` templates and
every locale of a key names the same placeholders (``tests/core/test_i18n.py`` checks it). It
holds the server's texts (re-prompts, answer summaries, deadline warnings, refusals of an
answer), the hosted elicitation page's, and the terminal client's. :class:`Texts` looks keys
up in one locale.

Choosing a locale:

* :func:`negotiate` reads an HTTP ``Accept-Language`` header (RFC 9110 §12.5.4: quality
  values, ``*``, ``q=0`` refusals); any ``pt`` tag (``pt``, ``pt-PT``, ``pt-BR``) gives
  ``pt-BR``, any ``en`` tag ``en-US``; a header naming neither gives the default.
* :func:`client_locale` is the locale a client asks for: the one it declares in ``_meta``
  under :data:`LOCALE_META_KEY` (a language tag, or a list written like ``Accept-Language``),
  else its HTTP request's ``Accept-Language``; ``None`` when neither names a known locale,
  and the server's default applies.
* :func:`choose_locale` is the terminal client's: ``--lang``, else the POSIX locale variables.

Pure: no I/O, no clock.
"""

from __future__ import annotations

import math
import string
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

__all__ = [
    "CATALOG",
    "DEFAULT_LOCALE",
    "LOCALES",
    "LOCALE_META_KEY",
    "Texts",
    "best_locale",
    "choose_locale",
    "client_locale",
    "negotiate",
    "placeholders",
]

#: The locales of the catalog.
LOCALES: Final = ("en-US", "pt-BR")
#: The locale used when nothing names a known one.
DEFAULT_LOCALE: Final = "en-US"
#: The ``_meta`` key under which a client declares its locale: on ``initialize`` (2025-06-18,
#: 2025-11-25) or on each request (2026-07-28). Its value is a language tag (``"pt-BR"``) or a
#: list written like ``Accept-Language`` (``"pt-BR, en;q=0.5"``).
LOCALE_META_KEY: Final = "io.erlmcp/locale"

_EN, _PT = LOCALES

#: The language of a tag -> the catalog's locale for it.
_LANGUAGES: Final = {"en": _EN, "pt": _PT}
#: How much of an ``Accept-Language`` header is read: a longer one is cut (never an error).
_MAX_HEADER_CHARS: Final = 4096
_MAX_RANGES: Final = 64

CATALOG: Final[Mapping[str, Mapping[str, str]]] = {
    # == the server: what a client shows its user ==============================================
    "mcp.elicitation.reprompt": {
        _EN: "{message}\n\nYour previous answer was not accepted (attempt {attempt}):\n{problems}",
        _PT: "{message}\n\nSua resposta anterior não foi aceita (tentativa {attempt}):\n{problems}",
    },
    "mcp.answer.valid": {_EN: "The answer is valid.", _PT: "A resposta é válida."},
    "mcp.answer.not_accepted.one": {
        _EN: "The answer was not accepted (1 problem):",
        _PT: "A resposta não foi aceita (1 problema):",
    },
    "mcp.answer.not_accepted.many": {
        _EN: "The answer was not accepted ({count} problems):",
        _PT: "A resposta não foi aceita ({count} problemas):",
    },
    "mcp.answer.too_large": {
        _EN: "The answer is too large ({size} bytes; the limit is {limit}).",
        _PT: "A resposta é grande demais ({size} bytes; o limite é {limit}).",
    },
    "mcp.answer.url_refused": {
        _EN: "{field}: this address is not allowed ({reason}).",
        _PT: "{field}: este endereço não é permitido ({reason}).",
    },
    # -- an answer error worded again from its constraint (erlmcp_py.core.error_texts) --------
    "mcp.answer.error.required": {
        _EN: "This field is required.",
        _PT: "Este campo é obrigatório.",
    },
    "mcp.answer.error.file_parts": {
        _EN: "The file's name, type and size are required.",
        _PT: "O nome, o tipo e o tamanho do arquivo são obrigatórios.",
    },
    "mcp.answer.error.must_be": {_EN: "Must be {what}.", _PT: "Deve ser {what}."},
    "mcp.answer.word.string": {_EN: "text", _PT: "texto"},
    "mcp.answer.word.number": {_EN: "a number", _PT: "um número"},
    "mcp.answer.word.integer": {_EN: "a whole number", _PT: "um número inteiro"},
    "mcp.answer.word.boolean": {_EN: "true or false", _PT: "verdadeiro ou falso"},
    "mcp.answer.word.array": {_EN: "a list of choices", _PT: "uma lista de opções"},
    "mcp.answer.word.object": {_EN: "an object of fields", _PT: "um objeto com campos"},
    "mcp.answer.word.email": {
        _EN: "a valid email address",
        _PT: "um endereço de e-mail válido",
    },
    "mcp.answer.word.uri": {
        _EN: "an absolute web address (e.g. https://example.com/)",
        _PT: "um endereço web absoluto (ex.: https://example.com/)",
    },
    "mcp.answer.word.date": {
        _EN: "a date as YYYY-MM-DD",
        _PT: "uma data no formato AAAA-MM-DD",
    },
    "mcp.answer.word.date-time": {
        _EN: "a date and time like 2025-01-31T09:30:00Z",
        _PT: "uma data e hora como 2025-01-31T09:30:00Z",
    },
    "mcp.answer.word.uuid": {_EN: "a UUID", _PT: "um UUID"},
    "mcp.answer.word.hostname": {_EN: "a host name", _PT: "um nome de host"},
    "mcp.answer.word.ipv4": {_EN: "an IPv4 address", _PT: "um endereço IPv4"},
    "mcp.answer.word.ipv6": {_EN: "an IPv6 address", _PT: "um endereço IPv6"},
    "mcp.answer.error.minLength.one": {
        _EN: "Must be at least {count} character long.",
        _PT: "Deve ter pelo menos {count} caractere.",
    },
    "mcp.answer.error.minLength.many": {
        _EN: "Must be at least {count} characters long.",
        _PT: "Deve ter pelo menos {count} caracteres.",
    },
    "mcp.answer.error.maxLength.one": {
        _EN: "Must be at most {count} character long.",
        _PT: "Deve ter no máximo {count} caractere.",
    },
    "mcp.answer.error.maxLength.many": {
        _EN: "Must be at most {count} characters long.",
        _PT: "Deve ter no máximo {count} caracteres.",
    },
    "mcp.answer.error.minimum": {
        _EN: "Must be at least {limit}.",
        _PT: "Deve ser no mínimo {limit}.",
    },
    "mcp.answer.error.maximum": {
        _EN: "Must be at most {limit}.",
        _PT: "Deve ser no máximo {limit}.",
    },
    "mcp.answer.error.exclusiveMinimum": {
        _EN: "Must be greater than {limit}.",
        _PT: "Deve ser maior que {limit}.",
    },
    "mcp.answer.error.exclusiveMaximum": {
        _EN: "Must be less than {limit}.",
        _PT: "Deve ser menor que {limit}.",
    },
    "mcp.answer.error.multipleOf": {
        _EN: "Must be a multiple of {limit}.",
        _PT: "Deve ser múltiplo de {limit}.",
    },
    "mcp.answer.error.on_or_after": {
        _EN: "Must be on or after {limit}.",
        _PT: "Deve ser igual ou posterior a {limit}.",
    },
    "mcp.answer.error.on_or_before": {
        _EN: "Must be on or before {limit}.",
        _PT: "Deve ser igual ou anterior a {limit}.",
    },
    "mcp.answer.error.option": {_EN: "Choose one of the options.", _PT: "Escolha uma das opções."},
    "mcp.answer.error.minItems": {
        _EN: "Choose at least {limit}.",
        _PT: "Escolha pelo menos {limit}.",
    },
    "mcp.answer.error.maxItems": {
        _EN: "Choose at most {limit}.",
        _PT: "Escolha no máximo {limit}.",
    },
    "mcp.answer.error.uniqueItems": {
        _EN: "Choose each option only once.",
        _PT: "Escolha cada opção uma só vez.",
    },
    "mcp.answer.error.pattern": {
        _EN: "Does not have the expected form.",
        _PT: "Não está no formato esperado.",
    },
    "mcp.answer.error.finite": {_EN: "Must be a finite number.", _PT: "Deve ser um número finito."},
    "mcp.answer.error.not_object": {
        _EN: "The answer must be an object of fields.",
        _PT: "A resposta deve ser um objeto com campos.",
    },
    "mcp.answer.error.additionalProperties": {
        _EN: "The answer has fields that the form does not have.",
        _PT: "A resposta tem campos que o formulário não tem.",
    },
    "mcp.answer.error.maxSize.one": {
        _EN: "The file must be at most {count} byte.",
        _PT: "O arquivo deve ter no máximo {count} byte.",
    },
    "mcp.answer.error.maxSize.many": {
        _EN: "The file must be at most {count} bytes.",
        _PT: "O arquivo deve ter no máximo {count} bytes.",
    },
    "mcp.answer.error.allowedMimeTypes": {
        _EN: "The file type must be one of: {allowed}.",
        _PT: "O tipo do arquivo deve ser um destes: {allowed}.",
    },
    "mcp.answer.error.allowedExtensions": {
        _EN: "The file name must end with one of: {allowed}.",
        _PT: "O nome do arquivo deve terminar com um destes: {allowed}.",
    },
    "mcp.answer.error.allowedSchemes": {_EN: "Must use {allowed}.", _PT: "Deve usar {allowed}."},
    "mcp.answer.error.blockLocalhost": {
        _EN: "Must not point at this machine (localhost).",
        _PT: "Não pode apontar para esta máquina (localhost).",
    },
    "mcp.answer.error.blockPrivateIPs": {
        _EN: "Must not point at a private or reserved address.",
        _PT: "Não pode apontar para um endereço privado ou reservado.",
    },
    "mcp.answer.error.urlPolicy": {
        _EN: "This address is not allowed.",
        _PT: "Este endereço não é permitido.",
    },
    "mcp.elicitation.expires.one": {
        _EN: "This request expires in 1 second.",
        _PT: "Este pedido expira em 1 segundo.",
    },
    "mcp.elicitation.expires.many": {
        _EN: "This request expires in {count} seconds.",
        _PT: "Este pedido expira em {count} segundos.",
    },
    # -- a tool call's missing arguments, asked by the gateway (erlmcp_py.gateway) -----------
    "gateway.arguments.ask": {
        _EN: "The tool {tool} needs more to run: {names}.",
        _PT: "A ferramenta {tool} precisa de mais dados para rodar: {names}.",
    },
    "gateway.arguments.declined": {
        _EN: "The tool {tool} was not run: the user declined to give {names}.",
        _PT: "A ferramenta {tool} não foi executada: o usuário se recusou a informar {names}.",
    },
    "gateway.arguments.cancelled": {
        _EN: "The tool {tool} was not run: the user cancelled the question for {names}.",
        _PT: "A ferramenta {tool} não foi executada: o usuário cancelou a pergunta sobre {names}.",
    },
    "gateway.arguments.timed_out": {
        _EN: "The tool {tool} was not run: nobody gave {names} in time.",
        _PT: "A ferramenta {tool} não foi executada: ninguém informou {names} a tempo.",
    },
    "gateway.arguments.failed": {
        _EN: "The tool {tool} was not run: the question for {names} ended ({reason}).",
        _PT: "A ferramenta {tool} não foi executada: a pergunta sobre {names} terminou ({reason}).",
    },
    # == the hosted elicitation page ===========================================================
    "mcp.elicitation.action.accept": {_EN: "Submit", _PT: "Enviar"},
    "mcp.elicitation.action.reject": {_EN: "Reject", _PT: "Recusar"},
    "mcp.elicitation.action.cancel": {_EN: "Cancel", _PT: "Cancelar"},
    "mcp.elicitation.timeout_warning": {
        _EN: "Closing in {seconds}s",
        _PT: "Fechando em {seconds}s",
    },
    "mcp.elicitation.url_mode.opening": {
        _EN: "Opening external page",
        _PT: "Abrindo página externa",
    },
    "mcp.elicitation.field_required": {_EN: "Required", _PT: "Obrigatório"},
    # -- the hosted elicitation page (erlmcp_py.transports._page) -------------------------------
    "mcp.elicitation.page.title": {
        _EN: "Information requested",
        _PT: "Informação solicitada",
    },
    "mcp.elicitation.page.secure_note": {
        _EN: "What you enter here goes to the server only, never through the chat.",
        _PT: "O que você digitar aqui vai apenas para o servidor, nunca pelo chat.",
    },
    "mcp.elicitation.page.choose": {_EN: "Choose…", _PT: "Escolha…"},
    "mcp.elicitation.page.accepted": {
        _EN: "Thank you. Your answer was sent; you can close this page.",
        _PT: "Obrigado. Sua resposta foi enviada; você pode fechar esta página.",
    },
    "mcp.elicitation.page.declined": {
        _EN: "You rejected this request. You can close this page.",
        _PT: "Você recusou este pedido. Você pode fechar esta página.",
    },
    "mcp.elicitation.page.cancelled": {
        _EN: "You cancelled this request. You can close this page.",
        _PT: "Você cancelou este pedido. Você pode fechar esta página.",
    },
    "mcp.elicitation.page.closed": {
        _EN: "This request is closed: it expired or was already answered.",
        _PT: "Este pedido está encerrado: expirou ou já foi respondido.",
    },
    "mcp.elicitation.page.not_found": {
        _EN: "There is no such request.",
        _PT: "Este pedido não existe.",
    },
    "mcp.elicitation.page.unavailable": {
        _EN: "This request cannot be reached right now; try again in a moment.",
        _PT: "Este pedido não pode ser acessado agora; tente de novo em instantes.",
    },
    "mcp.elicitation.page.not_sent": {
        _EN: "Your answer was not sent: it cannot be recorded right now. Try again in a moment.",
        _PT: "Sua resposta não foi enviada: ela não pode ser registrada agora. "
        "Tente de novo em instantes.",
    },
    "mcp.elicitation.page.forbidden": {
        _EN: "This answer did not come from this page; reload the page and try again.",
        _PT: "Esta resposta não veio desta página; recarregue a página e tente de novo.",
    },
    "mcp.elicitation.page.failed": {
        _EN: "The server could not check your answer, so this request has ended. "
        "You can close this page.",
        _PT: "O servidor não conseguiu verificar sua resposta, e este pedido foi encerrado. "
        "Você pode fechar esta página.",
    },
    "mcp.elicitation.page.busy": {
        _EN: "Your answer is being checked; try again in a moment.",
        _PT: "Sua resposta está sendo verificada; tente de novo em instantes.",
    },
    "mcp.elicitation.page.refused": {
        _EN: "The server did not accept this answer.",
        _PT: "O servidor não aceitou esta resposta.",
    },
    "mcp.elicitation.page.fix_errors": {
        _EN: "Please correct the fields marked below.",
        _PT: "Corrija os campos indicados abaixo.",
    },
    "mcp.elicitation.page.asked_by": {
        _EN: "Asked by {server}, for its tool {tool}.",
        _PT: "Pedido por {server}, para a ferramenta {tool}.",
    },
    "mcp.elicitation.page.asked_by_server": {
        _EN: "Asked by {server}.",
        _PT: "Pedido por {server}.",
    },
    "mcp.elicitation.page.retype_secret": {
        _EN: "Type this again: for your safety it is not kept when an answer is refused.",
        _PT: "Digite de novo: por segurança, isto não é guardado quando uma resposta é recusada.",
    },
    "mcp.elicitation.page.closes_in": {_EN: "Closes in {time}", _PT: "Fecha em {time}"},
    "mcp.elicitation.page.closes_in_minutes.one": {
        _EN: "This page closes in {count} minute.",
        _PT: "Esta página fecha em {count} minuto.",
    },
    "mcp.elicitation.page.closes_in_minutes.many": {
        _EN: "This page closes in {count} minutes.",
        _PT: "Esta página fecha em {count} minutos.",
    },
    "mcp.elicitation.page.closes_in_seconds.one": {
        _EN: "This page closes in {count} second.",
        _PT: "Esta página fecha em {count} segundo.",
    },
    "mcp.elicitation.page.closes_in_seconds.many": {
        _EN: "This page closes in {count} seconds.",
        _PT: "Esta página fecha em {count} segundos.",
    },
    "mcp.elicitation.page.invalid": {_EN: "Invalid value", _PT: "Valor inválido"},
    "mcp.elicitation.page.too_short": {
        _EN: "At least {n} characters",
        _PT: "Pelo menos {n} caracteres",
    },
    "mcp.elicitation.page.too_long": {
        _EN: "At most {n} characters",
        _PT: "No máximo {n} caracteres",
    },
    "mcp.elicitation.page.too_small": {
        _EN: "Must be at least {n}",
        _PT: "Deve ser no mínimo {n}",
    },
    "mcp.elicitation.page.too_large": {
        _EN: "Must be at most {n}",
        _PT: "Deve ser no máximo {n}",
    },
    "mcp.elicitation.page.not_integer": {
        _EN: "Must be a whole number",
        _PT: "Deve ser um número inteiro",
    },
    "mcp.elicitation.page.not_number": {_EN: "Must be a number", _PT: "Deve ser um número"},
    "mcp.elicitation.page.not_email": {
        _EN: "Must be an email address",
        _PT: "Deve ser um endereço de e-mail",
    },
    "mcp.elicitation.page.not_url": {
        _EN: "Must be a web address (https://…)",
        _PT: "Deve ser um endereço web (https://…)",
    },
    "mcp.elicitation.page.not_date": {
        _EN: "Must be a date (YYYY-MM-DD)",
        _PT: "Deve ser uma data (AAAA-MM-DD)",
    },
    "mcp.elicitation.page.pattern": {
        _EN: "Does not have the expected form",
        _PT: "Não está no formato esperado",
    },
    "mcp.elicitation.page.choices": {
        _EN: "Choose between {lo} and {hi}",
        _PT: "Escolha entre {lo} e {hi}",
    },
    # == the terminal client (erlmcp-py connect) ===============================================
    # -- connection and REPL -------------------------------------------------------------------
    "connected": {
        _EN: "Connected to {server} (protocol {protocol}, {transport}).",
        _PT: "Conectado a {server} (protocolo {protocol}, {transport}).",
    },
    "type_help": {
        _EN: "Type help for the commands.",
        _PT: "Digite help para ver os comandos.",
    },
    "help": {
        _EN: (
            "Commands:\n"
            "  tools                       list the server's tools\n"
            "  call TOOL key=value ...     call a tool (values are JSON when they parse, "
            "else text)\n"
            "  resources                   list the server's resources and resource templates\n"
            "  read URI                    show a resource's contents\n"
            "  prompts                     list the server's prompts\n"
            "  prompt NAME key=value ...   get a prompt and show its messages (values are "
            "text)\n"
            "  task TASK_ID                follow a task started earlier: its questions, then "
            "its result\n"
            "  cancel TASK_ID              cancel a task, then follow it to its end\n"
            "  help                        this help\n"
            "  quit                        leave\n"
            "Up and Down recall earlier commands (and earlier answers, in a form). Enter takes "
            "a field's default. Ctrl-C cancels the open form, else stops the running call; at "
            "the prompt it leaves. While a task is followed, Ctrl-C offers to cancel it or "
            "leave it running."
        ),
        _PT: (
            "Comandos:\n"
            "  tools                       lista as ferramentas do servidor\n"
            "  call TOOL chave=valor ...   chama uma ferramenta (valores em JSON quando "
            "possível, senão texto)\n"
            "  resources                   lista os recursos e modelos de recurso do servidor\n"
            "  read URI                    mostra o conteúdo de um recurso\n"
            "  prompts                     lista os prompts do servidor\n"
            "  prompt NOME chave=valor ... obtém um prompt e mostra suas mensagens (valores "
            "em texto)\n"
            "  task ID_DA_TAREFA           acompanha uma tarefa iniciada antes: suas "
            "perguntas, depois seu resultado\n"
            "  cancel ID_DA_TAREFA         cancela uma tarefa, depois a acompanha até o fim\n"
            "  help                        esta ajuda\n"
            "  quit                        sair\n"
            "Setas para cima e para baixo trazem comandos anteriores (e respostas anteriores, "
            "num formulário). Enter usa o padrão do campo. Ctrl-C cancela o formulário aberto, "
            "senão interrompe a chamada em curso; no prompt, sai. Enquanto uma tarefa é "
            "acompanhada, Ctrl-C oferece cancelá-la ou deixá-la rodando."
        ),
    },
    "prompt": {_EN: "mcp> ", _PT: "mcp> "},
    "unknown_command": {
        _EN: "Unknown command: {command}. Type help.",
        _PT: "Comando desconhecido: {command}. Digite help.",
    },
    "call_usage": {
        _EN: "Usage: call TOOL key=value ...",
        _PT: "Uso: call TOOL chave=valor ...",
    },
    "no_tools": {_EN: "The server has no tools.", _PT: "O servidor não tem ferramentas."},
    "tools_heading": {_EN: "Tools ({count}):", _PT: "Ferramentas ({count}):"},
    "unknown_tool": {
        _EN: "No tool named {name}. Type tools to list them.",
        _PT: "Nenhuma ferramenta chamada {name}. Digite tools para listá-las.",
    },
    "bad_argument": {
        _EN: "Argument {text} is not key=value.",
        _PT: "O argumento {text} não está no formato chave=valor.",
    },
    "arguments_invalid": {
        _EN: "The arguments do not fit {tool}'s input schema:",
        _PT: "Os argumentos não servem ao esquema de entrada de {tool}:",
    },
    "arg_missing": {
        _EN: "{name}: required, missing",
        _PT: "{name}: obrigatório, faltando",
    },
    "arg_unknown": {
        _EN: "{name}: no such argument",
        _PT: "{name}: argumento inexistente",
    },
    "arg_unknown_close": {
        _EN: "{name}: no such argument; did you mean {suggestion}?",
        _PT: "{name}: argumento inexistente; você quis dizer {suggestion}?",
    },
    "prompt_arguments_invalid": {
        _EN: "The arguments do not fit prompt {prompt}:",
        _PT: "Os argumentos não servem ao prompt {prompt}:",
    },
    "arg_type": {
        _EN: "{name}: expected {expected}, got {actual}",
        _PT: "{name}: esperado {expected}, recebido {actual}",
    },
    "arg_other": {_EN: "{name}: {detail}", _PT: "{name}: {detail}"},
    "result": {_EN: "Result:", _PT: "Resultado:"},
    "tool_error": {_EN: "Tool error:", _PT: "Erro da ferramenta:"},
    "rpc_error": {
        _EN: "The server answered with error {code}: {message}",
        _PT: "O servidor respondeu com o erro {code}: {message}",
    },
    "connection_lost": {
        _EN: "The connection to the server ended.",
        _PT: "A conexão com o servidor terminou.",
    },
    "connect_failed": {
        _EN: "Could not connect: {reason}",
        _PT: "Não foi possível conectar: {reason}",
    },
    "no_endpoint": {
        _EN: "no MCP endpoint at {url}",
        _PT: "nenhum endpoint MCP em {url}",
    },
    "no_endpoint_hint": {
        _EN: (
            "no MCP endpoint at {url} (the erlmcp-py server's endpoint is /mcp; did you mean "
            "{suggestion}?)"
        ),
        _PT: (
            "nenhum endpoint MCP em {url} (o endpoint do servidor erlmcp-py é /mcp; você quis "
            "dizer {suggestion}?)"
        ),
    },
    "history_not_saved": {
        _EN: "Command history not saved to {path}: {reason}",
        _PT: "Histórico de comandos não salvo em {path}: {reason}",
    },
    "server_exited": {_EN: "the server has exited", _PT: "o servidor encerrou"},
    "call_stopped": {_EN: "Call stopped.", _PT: "Chamada interrompida."},
    "request_stopped": {_EN: "Request stopped.", _PT: "Pedido interrompido."},
    # -- resources and prompts -----------------------------------------------------------------
    "resources_heading": {_EN: "Resources ({count}):", _PT: "Recursos ({count}):"},
    "templates_heading": {
        _EN: "Resource templates ({count}):",
        _PT: "Modelos de recurso ({count}):",
    },
    "no_resources": {_EN: "The server has no resources.", _PT: "O servidor não tem recursos."},
    "resources_not_offered": {
        _EN: "The server does not offer resources.",
        _PT: "O servidor não oferece recursos.",
    },
    "read_usage": {_EN: "Usage: read URI", _PT: "Uso: read URI"},
    "prompts_heading": {_EN: "Prompts ({count}):", _PT: "Prompts ({count}):"},
    "no_prompts": {_EN: "The server has no prompts.", _PT: "O servidor não tem prompts."},
    "prompts_not_offered": {
        _EN: "The server does not offer prompts.",
        _PT: "O servidor não oferece prompts.",
    },
    "prompt_usage": {
        _EN: "Usage: prompt NAME key=value ...",
        _PT: "Uso: prompt NOME chave=valor ...",
    },
    "unknown_prompt": {
        _EN: "No prompt named {name}. Type prompts to list them.",
        _PT: "Nenhum prompt chamado {name}. Digite prompts para listá-los.",
    },
    "prompt_messages": {_EN: "Messages:", _PT: "Mensagens:"},
    "binary_summary": {
        _EN: "{kind}, {mime}, {size} bytes",
        _PT: "{kind}, {mime}, {size} bytes",
    },
    "content_blob": {_EN: "binary", _PT: "binário"},
    "content_image": {_EN: "image", _PT: "imagem"},
    "content_audio": {_EN: "audio", _PT: "áudio"},
    "content_resource": {_EN: "resource {uri}", _PT: "recurso {uri}"},
    "content_link": {_EN: "link to {uri}", _PT: "link para {uri}"},
    "type_unknown": {_EN: "type unknown", _PT: "tipo desconhecido"},
    "bye": {_EN: "Bye.", _PT: "Até mais."},
    "interrupt_exits": {
        _EN: "(Ctrl-C again leaves.)",
        _PT: "(Ctrl-C de novo para sair.)",
    },
    # -- forms ---------------------------------------------------------------------------------
    "server_asks": {_EN: "The server asks:", _PT: "O servidor pergunta:"},
    "required_legend": {_EN: "* Required", _PT: "* Obrigatório"},
    "default": {_EN: "default: {value}", _PT: "padrão: {value}"},
    "length_between": {
        _EN: "{low} to {high} characters",
        _PT: "de {low} a {high} caracteres",
    },
    "length_min": {_EN: "at least {low} characters", _PT: "pelo menos {low} caracteres"},
    "length_max": {_EN: "at most {high} characters", _PT: "no máximo {high} caracteres"},
    "range_between": {_EN: "{low} to {high}", _PT: "de {low} a {high}"},
    "range_min": {_EN: "at least {low}", _PT: "no mínimo {low}"},
    "range_max": {_EN: "at most {high}", _PT: "no máximo {high}"},
    "kind_integer": {_EN: "whole number", _PT: "número inteiro"},
    "kind_number": {_EN: "number", _PT: "número"},
    "format_email": {_EN: "email address", _PT: "endereço de e-mail"},
    "format_uri": {_EN: "URL", _PT: "URL"},
    "format_date": {_EN: "date, YYYY-MM-DD", _PT: "data, AAAA-MM-DD"},
    "format_date-time": {
        _EN: "date and time, YYYY-MM-DDTHH:MM:SSZ",
        _PT: "data e hora, AAAA-MM-DDTHH:MM:SSZ",
    },
    "yes_no": {_EN: "y/n", _PT: "s/n"},
    "yes_letters": {_EN: "y,yes", _PT: "s,sim,y,yes"},
    "no_letters": {_EN: "n,no", _PT: "n,não,nao,no"},
    "choose_one": {_EN: "number", _PT: "número"},
    "choose_many": {
        _EN: "numbers separated by commas",
        _PT: "números separados por vírgula",
    },
    "choose_none": {_EN: "empty for none", _PT: "vazio para nenhum"},
    # -- answer errors (per field, before sending) ---------------------------------------------
    "err_required": {_EN: "Required: enter a value.", _PT: "Obrigatório: digite um valor."},
    "err_not_number": {_EN: "Not a number.", _PT: "Não é um número."},
    "err_not_integer": {_EN: "Not a whole number.", _PT: "Não é um número inteiro."},
    "err_yes_no": {_EN: "Answer y or n.", _PT: "Responda s ou n."},
    "err_not_option": {
        _EN: "Choose by number, 1 to {count}.",
        _PT: "Escolha pelo número, de 1 a {count}.",
    },
    "err_repeated": {_EN: "An option is repeated.", _PT: "Uma opção está repetida."},
    "err_minLength": {
        _EN: "Too short: at least {limit} characters.",
        _PT: "Curto demais: pelo menos {limit} caracteres.",
    },
    "err_maxLength": {
        _EN: "Too long: at most {limit} characters.",
        _PT: "Longo demais: no máximo {limit} caracteres.",
    },
    "err_minimum": {_EN: "Too small: at least {limit}.", _PT: "Pequeno demais: no mínimo {limit}."},
    "err_maximum": {_EN: "Too large: at most {limit}.", _PT: "Grande demais: no máximo {limit}."},
    "err_minItems": {
        _EN: "Choose at least {limit}.",
        _PT: "Escolha pelo menos {limit}.",
    },
    "err_maxItems": {
        _EN: "Choose at most {limit}.",
        _PT: "Escolha no máximo {limit}.",
    },
    "err_format": {_EN: "Not a valid {what}.", _PT: "{what} inválido."},
    # -- the choice at the end of a form -------------------------------------------------------
    "action_prompt": {
        _EN: "[1] {submit}  [2] {reject}  [3] {cancel} ",
        _PT: "[1] {submit}  [2] {reject}  [3] {cancel} ",
    },
    "err_action": {
        _EN: "Answer 1, 2 or 3 (or {submit}, {reject}, {cancel}).",
        _PT: "Responda 1, 2 ou 3 (ou {submit}, {reject}, {cancel}).",
    },
    "sent": {_EN: "Answer sent.", _PT: "Resposta enviada."},
    "declined": {_EN: "Rejected.", _PT: "Recusado."},
    "cancelled": {_EN: "Cancelled.", _PT: "Cancelado."},
    # -- URL mode ------------------------------------------------------------------------------
    "url_asks": {
        _EN: "The server asks you to continue on a web page:",
        _PT: "O servidor pede que você continue em uma página web:",
    },
    "url_choice": {
        _EN: "[1] open it in the browser  [2] I will open it myself  [3] {reject}  [4] {cancel} ",
        _PT: "[1] abrir no navegador  [2] eu mesmo abro  [3] {reject}  [4] {cancel} ",
    },
    "err_url_choice": {_EN: "Answer 1, 2, 3 or 4.", _PT: "Responda 1, 2, 3 ou 4."},
    "url_no_browser": {
        _EN: "No browser could be opened; open this URL yourself: {url}",
        _PT: "Nenhum navegador pôde ser aberto; abra este endereço você mesmo: {url}",
    },
    "url_waiting": {
        _EN: "Waiting for the page to finish (Ctrl-C stops the call).",
        _PT: "Aguardando a página terminar (Ctrl-C interrompe a chamada).",
    },
    "url_done": {_EN: "The page is done.", _PT: "A página terminou."},
    "url_required": {
        _EN: "The tool needs a web page completed first:",
        _PT: "A ferramenta precisa que uma página web seja concluída antes:",
    },
    # -- tasks (the io.modelcontextprotocol/tasks extension) -----------------------------------
    "task_following": {
        _EN: "Following task {id} (Ctrl-C: cancel it or leave it running).",
        _PT: "Acompanhando a tarefa {id} (Ctrl-C: cancelá-la ou deixá-la rodando).",
    },
    "task_working": {_EN: "Task working.", _PT: "Tarefa em andamento."},
    "task_input_required": {
        _EN: "Task waiting for an answer.",
        _PT: "Tarefa aguardando uma resposta.",
    },
    "task_completed": {_EN: "Task completed.", _PT: "Tarefa concluída."},
    "task_failed": {_EN: "Task failed.", _PT: "Tarefa falhou."},
    "task_cancelled": {_EN: "Task cancelled.", _PT: "Tarefa cancelada."},
    "task_message": {_EN: "⚠ {message}", _PT: "⚠ {message}"},
    "task_link": {
        _EN: "Anyone with this link can answer it instead: {url}",
        _PT: "Qualquer pessoa com este link pode respondê-la em seu lugar: {url}",
    },
    "task_question_closed": {
        _EN: "This question was answered or closed elsewhere.",
        _PT: "Esta pergunta foi respondida ou encerrada em outro lugar.",
    },
    "task_menu": {
        _EN: "[1] cancel the task  [2] leave it running  [3] keep following ",
        _PT: "[1] cancelar a tarefa  [2] deixá-la rodando  [3] continuar acompanhando ",
    },
    "err_task_menu": {_EN: "Answer 1, 2 or 3.", _PT: "Responda 1, 2 ou 3."},
    "task_cancelling": {
        _EN: "Asking the server to cancel the task.",
        _PT: "Pedindo ao servidor que cancele a tarefa.",
    },
    "task_left": {
        _EN: "Task {id} goes on running; follow it again with: task {id}",
        _PT: "A tarefa {id} continua rodando; acompanhe-a de novo com: task {id}",
    },
    "task_error": {
        _EN: "The task failed with error {code}: {message}",
        _PT: "A tarefa falhou com o erro {code}: {message}",
    },
    "task_usage": {_EN: "Usage: task TASK_ID", _PT: "Uso: task ID_DA_TAREFA"},
    "cancel_usage": {_EN: "Usage: cancel TASK_ID", _PT: "Uso: cancel ID_DA_TAREFA"},
    "tasks_unavailable": {
        _EN: "Tasks need --protocol 2026-07-28 (and no --no-tasks).",
        _PT: "Tarefas precisam de --protocol 2026-07-28 (e sem --no-tasks).",
    },
    # -- notifications -------------------------------------------------------------------------
    "closed_by_server": {
        _EN: "The server closed the question.",
        _PT: "O servidor encerrou a pergunta.",
    },
    "server_log": {_EN: "[{level}] {text}", _PT: "[{level}] {text}"},
    "progress": {_EN: "progress {progress}{total}", _PT: "progresso {progress}{total}"},
    "server_request_unsupported": {
        _EN: "The server sent {method}, which this client does not answer.",
        _PT: "O servidor enviou {method}, que este cliente não responde.",
    },
}


def placeholders(template: str) -> frozenset[str]:
    """The names of the ``{placeholders}`` of a catalog text."""
    return frozenset(name for _, name, _, _ in string.Formatter().parse(template) if name)


def _locale_of(tag: str) -> str | None:
    """The catalog locale of one language tag (``pt_BR.UTF-8`` style accepted), by its
    primary language; ``None`` for a language the catalog does not have."""
    language = tag.strip().replace("_", "-").split("-", 1)[0].lower()
    return _LANGUAGES.get(language)


def _quality(parameters: list[str]) -> float | None:
    """The ``q`` of a language range (1 when absent); ``None`` when it is not a number in
    [0, 1] (the range is then ignored)."""
    quality = 1.0
    for parameter in parameters:
        name, _, value = parameter.partition("=")
        if name.strip().lower() == "q":
            try:
                quality = float(value.strip())
            except ValueError:
                return None
            if not (math.isfinite(quality) and 0.0 <= quality <= 1.0):
                return None
    return quality


def best_locale(accept_language: str | None) -> str | None:
    """The catalog locale an ``Accept-Language`` value prefers, or ``None`` if it names none.

    Ranges are taken by quality, highest first (ties in the order written); a range with
    ``q=0`` refuses its locale; ``*`` takes the default locale unless refused, else the other.
    Malformed ranges are ignored; the value is never an error.

    Args:
        accept_language: The header's value (or a single tag), or ``None``.
    """
    if not accept_language:
        return None
    ranges: list[tuple[float, int, str]] = []
    items = accept_language[:_MAX_HEADER_CHARS].split(",")[:_MAX_RANGES]
    for position, item in enumerate(items):
        tag, *parameters = item.split(";")
        tag = tag.strip()
        quality = _quality(parameters)
        if tag and quality is not None:
            ranges.append((-quality, position, tag))
    ranges.sort()
    refused = {_locale_of(tag) for quality, _, tag in ranges if quality == 0}
    for quality, _, tag in ranges:
        if quality == 0:
            break  # sorted: every range from here on is a refusal
        if tag == "*":
            wildcard = [locale for locale in (DEFAULT_LOCALE, *LOCALES) if locale not in refused]
            if wildcard:
                return wildcard[0]
            continue
        locale = _locale_of(tag)
        if locale is not None and locale not in refused:
            return locale
    return None


def negotiate(accept_language: str | None, default: str = DEFAULT_LOCALE) -> str:
    """The catalog locale for an ``Accept-Language`` value: :func:`best_locale`, else
    ``default`` (``pt``, ``pt-PT``, ``pt-BR`` → ``pt-BR``; ``fr`` → ``default``).

    Args:
        accept_language: The header's value, or ``None``.
        default: The locale when the header names no known one (the server's default).

    Returns:
        One of :data:`LOCALES`.
    """
    return best_locale(accept_language) or default


def client_locale(declared: object, accept_language: str | None) -> str | None:
    """The locale a client asks for: the one it declared under :data:`LOCALE_META_KEY` (when
    it names a known locale), else its request's ``Accept-Language``; ``None`` when neither
    does (the server's default applies).

    Args:
        declared: The ``_meta`` value as sent (anything but a string is ignored).
        accept_language: The HTTP ``Accept-Language`` header, or ``None``.
    """
    if isinstance(declared, str):
        locale = best_locale(declared)
        if locale is not None:
            return locale
    return best_locale(accept_language)


def choose_locale(requested: str | None, environ: Mapping[str, str]) -> str:
    """The terminal client's locale: ``--lang`` (``requested``) or the POSIX locale variables.

    ``requested`` wins when given; else the first set of ``LC_ALL``, ``LC_MESSAGES`` and
    ``LANG`` decides (POSIX precedence). ``pt_BR.UTF-8``, ``pt-BR`` and any other ``pt`` locale
    give ``pt-BR``; everything else gives ``en-US``.

    Args:
        requested: The ``--lang`` value, or ``None``.
        environ: The process environment.

    Returns:
        One of :data:`LOCALES`.
    """
    name = requested
    if name is None:
        for var in ("LC_ALL", "LC_MESSAGES", "LANG"):
            if environ.get(var):
                name = environ[var]
                break
    if name is None:
        return DEFAULT_LOCALE
    return _locale_of(name.split(".", 1)[0].split("@", 1)[0]) or DEFAULT_LOCALE


@dataclass(frozen=True, slots=True)
class Texts:
    """The catalog's texts in one locale.

    Attributes:
        locale: One of :data:`LOCALES`.
    """

    locale: str = DEFAULT_LOCALE

    def __post_init__(self) -> None:
        if self.locale not in LOCALES:
            raise ValueError(f"locale must be one of {', '.join(LOCALES)}, got {self.locale!r}")

    def __call__(self, key: str, **values: object) -> str:
        """The text of ``key`` in this locale, with ``values`` filled in.

        Raises:
            KeyError: ``key`` is not in the catalog.
        """
        return CATALOG[key][self.locale].format(**values)

    def count(self, key: str, n: int, **values: object) -> str:
        """The text of ``key.one`` when ``n`` is 1, else of ``key.many``, with ``n`` filled
        in as ``{count}`` and ``values`` as the rest (both locales pluralise this way).

        Raises:
            KeyError: ``key`` has no ``.one`` or ``.many`` text.
        """
        return self(f"{key}.one" if n == 1 else f"{key}.many", count=n, **values)

    def words(self, key: str) -> frozenset[str]:
        """A comma-separated catalog entry as a set of lower-case words."""
        return frozenset(w.strip().lower() for w in self(key).split(",") if w.strip())
