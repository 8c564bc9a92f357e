"""NetworkPolicy (``networking.k8s.io/v1``) as HNS ACLs, pure: API objects in, per-endpoint ACL
rules out. ``resources`` reads the API objects, ``selectors`` matches labels, ``model`` says what each
pod may receive and send (and ``allows`` answers one packet), ``addresses`` subtracts and chunks
CIDRs, ``translate`` turns a pod's access into ACL rules in the priority bands of
``plugins.winnet.acls``. Nothing here is imported on a pod command."""
