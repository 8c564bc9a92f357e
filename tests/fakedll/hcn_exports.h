/* The computenetwork.dll exports libhns.ctypes_backend binds, as X-macro lists for both fakes:
 * X(Kind, Kinds) for HcnEnumerate<Kinds>/Open/Modify/Query…Properties/Delete/Close, and
 * X(Kind) for the kinds whose HcnCreate<Kind> takes no network handle (HcnCreateEndpoint does). */
#define HCN_KINDS(X) X(Network, Networks) X(Endpoint, Endpoints) X(Namespace, Namespaces) \
    X(LoadBalancer, LoadBalancers)
#define HCN_CREATE_KINDS(X) X(Network) X(Namespace) X(LoadBalancer)
