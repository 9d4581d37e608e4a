// SPDX-License-Identifier: Apache-2.0
package spanprof.context;

import java.io.File;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * The JNI part (writer/java/native/spanprof_jni.c with the writer library compiled in),
 * libspanprof_java.so. Loaded once: from the path in the system property spanprof.native or the
 * environment variable SPANPROF_JAVA_NATIVE when set, else from the copy bundled in this jar
 * (/spanprof/linux-x86_64/libspanprof_java.so), extracted to a new file readable by this user
 * only under java.io.tmpdir (deleted when the JVM exits: spanprof reads the library's symbols
 * from the file while the process runs). If it cannot be loaded, {@link #ok()} is false, the
 * reason is logged once, and the extension publishes nothing.
 */
final class Native {
  private static final Logger logger = Logger.getLogger("spanprof.context");
  private static final String RESOURCE = "/spanprof/linux-x86_64/libspanprof_java.so";
  private static final boolean OK = load();

  private Native() {}

  static boolean ok() {
    return OK;
  }

  private static boolean load() {
    try {
      if (!"Linux".equals(System.getProperty("os.name"))
          || !"amd64".equals(System.getProperty("os.arch"))) {
        throw new UnsatisfiedLinkError(
            System.getProperty("os.name") + "/" + System.getProperty("os.arch")
                + " is not supported (Linux x86-64 only)");
      }
      String path = System.getProperty("spanprof.native");
      if (path == null) {
        path = System.getenv("SPANPROF_JAVA_NATIVE");
      }
      if (path == null) {
        path = extract().getAbsolutePath();
      }
      System.load(path);
      detach(attachNone()); // proves the natives are bound
      return true;
    } catch (Throwable t) {
      logger.log(Level.WARNING, "spanprof: the native part did not load, publishing nothing: " + t);
      return false;
    }
  }

  private static File extract() throws Exception {
    try (InputStream in = Native.class.getResourceAsStream(RESOURCE)) {
      if (in == null) {
        throw new UnsatisfiedLinkError(RESOURCE + " is not in the jar");
      }
      // createTempFile: a new name, mode 0600.
      File f = File.createTempFile("spanprof_java", ".so");
      f.deleteOnExit();
      Files.copy(in, f.toPath(), StandardCopyOption.REPLACE_EXISTING);
      return f;
    }
  }

  /** Publishes (traceIdHex, spanIdHex) on the calling thread; the token for {@link #detach}. */
  static native long attach(String traceIdHex, String spanIdHex, int traceFlags);

  /** A level that publishes no span on the calling thread. */
  static native long attachNone();

  /** Restores what the calling thread published before the attach that returned token. */
  static native void detach(long token);

  /** The calling thread's published record, "TRACE-SPAN" in hex, or null. */
  static native String current();

  /** spctx_process_publish: 0 or -errno. keyValues: key, value, key, value, ... */
  static native int publishProcess(String[] keyValues, String[] attrKeys);

  static native int unpublishProcess();
}
