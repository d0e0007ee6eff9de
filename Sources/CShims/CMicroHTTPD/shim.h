#ifndef CMICROHTTPD_SHIM_H
#define CMICROHTTPD_SHIM_H

#include <sys/types.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <stddef.h>
#include <stdint.h>
#include <stdarg.h>
#include <microhttpd.h>

// microhttpd.h has no typedef for the MHD_OPTION_URI_LOG_CALLBACK function; this names it so the
// start shim below can take it as a typed, fixed argument.
typedef void *(*CMicroHTTPD_URILogCallback)(void *cls, const char *uri, struct MHD_Connection *connection);

// MHD_start_daemon is variadic (its options follow as `...`), which Swift cannot call. This shim
// fixes the argument list: the three callbacks that take a function pointer plus a context pointer
// (access handler, MHD_OPTION_NOTIFY_COMPLETED, MHD_OPTION_URI_LOG_CALLBACK) are typed parameters,
// and every other option arrives as an MHD_OPTION_ARRAY terminated by {MHD_OPTION_END, 0, NULL}.
// MHD_OPTION_NOTIFY_CONNECTION (connection opened and closed) is the fourth such callback.
// The accept-policy callback (apc) decides per connecting address, before MHD keeps the connection.
static inline struct MHD_Daemon *CMicroHTTPD_start_daemon(
    unsigned int flags, uint16_t port,
    MHD_AcceptPolicyCallback apc, void *apc_cls,
    MHD_AccessHandlerCallback handler, void *handler_cls,
    MHD_RequestCompletedCallback completed, void *completed_cls,
    CMicroHTTPD_URILogCallback uri_log, void *uri_log_cls,
    MHD_NotifyConnectionCallback notify, void *notify_cls,
    struct MHD_OptionItem *options)
{
    return MHD_start_daemon(flags, port, apc, apc_cls, handler, handler_cls,
                            MHD_OPTION_NOTIFY_COMPLETED, completed, completed_cls,
                            MHD_OPTION_URI_LOG_CALLBACK, uri_log, uri_log_cls,
                            MHD_OPTION_NOTIFY_CONNECTION, notify, notify_cls,
                            MHD_OPTION_ARRAY, options,
                            MHD_OPTION_END);
}

// MHD_get_daemon_info is variadic (a trailing `...` kept for binary compatibility), which Swift cannot
// call. Returns the port the listen socket is bound to, or 0 when MHD cannot tell.
static inline uint16_t CMicroHTTPD_daemon_bind_port(struct MHD_Daemon *daemon)
{
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(daemon, MHD_DAEMON_INFO_BIND_PORT);
    return info == NULL ? 0 : info->port;
}

// MHD_get_connection_info is variadic (a trailing `...` kept for binary compatibility), which Swift
// cannot call. Returns the peer address (owned by MHD, valid for the connection's lifetime) or NULL.
static inline const struct sockaddr *CMicroHTTPD_connection_client_address(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
    return info == NULL ? NULL : info->client_addr;
}

// MHD_get_connection_info again (variadic): the connection's socket, or -1 when MHD cannot tell.
static inline int CMicroHTTPD_connection_fd(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_CONNECTION_FD);
    return info == NULL ? -1 : info->connect_fd;
}

// MHD_get_connection_info again (variadic): the pointer the connection-notify callback stored in
// its `socket_context` when the connection opened, or NULL.
static inline void *CMicroHTTPD_connection_socket_context(struct MHD_Connection *connection)
{
    const union MHD_ConnectionInfo *info = MHD_get_connection_info(connection, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return info == NULL ? NULL : info->socket_context;
}

#endif
