/* A static executable: its malloc comes from libc.a and sits in .symtab only. */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
	char *p = malloc(64 + argc);

	snprintf(p, 64, "%s", argv[0]);
	puts(p);
	free(p);
	return 0;
}
