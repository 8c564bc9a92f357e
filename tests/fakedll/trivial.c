/* The Wine floor: a Windows program that does nothing, to time what Wine itself costs per process. */
int main(void) { return 0; }
