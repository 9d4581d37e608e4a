// SPDX-License-Identifier: Apache-2.0
// The native half of JvmChain's "jni" scenario (test_jvm.py): JvmChain.nativeCall calls back
// into Java (JvmChain.callback), so a stack runs Java -> C -> Java.
#include <jni.h>

JNIEXPORT jlong JNICALL Java_JvmChain_nativeCall(JNIEnv *env, jclass cls, jint n)
{
	static jmethodID cb;

	if (!cb)
		cb = (*env)->GetStaticMethodID(env, cls, "callback", "(I)J");
	if (!cb)
		return -1;
	return (*env)->CallStaticLongMethod(env, cls, cb, n) + 1;
}
